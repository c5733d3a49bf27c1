-- Where the lake of Parquet shards lives, recorded when the warehouse is created (BABELBENCH_LAKE): a URL such
-- as file:///shared/lake or s3://bucket/lake. NULL is the home's own lake/ folder (a home can move). Catalog paths
-- are relative to it, so a later open on another lake is refused. Never credentials: those come from fsspec.
ALTER TABLE warehouse_info ADD COLUMN lake VARCHAR;
