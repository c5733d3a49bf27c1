"""The llama.cpp check: which compiled-in instruction sets a machine cannot run, and the installed build is portable."""

from __future__ import annotations

import pytest

from tasks.llm.backends.llamacpp_check import compiled_features, cpu_flags, unusable_features

# The shape llama_print_system_info() prints, here for a native build on a Sapphire Rapids VM.
NATIVE_INFO = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 |"
               " AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 |"
               " OPENMP = 1 | REPACK = 1 |")
XEON_AMX_FLAGS = ("fpu sse sse2 ssse3 pni fma f16c avx avx2 bmi2 avx512f avx512vbmi avx512_vnni avx512_bf16 avx_vnni"
                  " amx_bf16 amx_tile amx_int8 avx512_fp16")
EPYC_FLAGS = "fpu sse sse2 ssse3 pni fma f16c avx avx2 bmi2"


def test_compiled_features_reads_only_the_sets_switched_on() -> None:
    assert compiled_features("CPU : SSE3 = 1 | AVX = 0 | AVX2 = 1 | AMX_INT8 = 1 |") == {"SSE3", "AVX2", "AMX_INT8"}


def test_cpu_flags_takes_the_flags_line() -> None:
    cpuinfo = f"processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: {EPYC_FLAGS}\nbogomips\t: 4000\n"
    assert cpu_flags(cpuinfo) == set(EPYC_FLAGS.split())


def test_amx_build_on_a_vm_that_refuses_amx_tiles_is_reported() -> None:
    problems = unusable_features(compiled_features(NATIVE_INFO), set(XEON_AMX_FLAGS.split()), amx_allowed=False)
    assert len(problems) == 1 and problems[0].startswith("AMX_INT8") and "kernel" in problems[0]


def test_the_same_build_runs_where_amx_is_granted() -> None:
    assert unusable_features(compiled_features(NATIVE_INFO), set(XEON_AMX_FLAGS.split()), amx_allowed=True) == []


def test_a_build_for_a_newer_cpu_names_every_missing_instruction_set() -> None:
    problems = unusable_features(compiled_features(NATIVE_INFO), set(EPYC_FLAGS.split()), amx_allowed=False)
    assert [p.split()[0] for p in problems] == ["AMX_INT8", "AVX512", "AVX512_BF16", "AVX512_VBMI", "AVX512_VNNI",
                                                "AVX_VNNI"]


def test_the_installed_library_is_the_portable_build() -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    info = llama_cpp.llama_print_system_info()
    compiled = compiled_features(info.decode() if isinstance(info, bytes) else str(info))
    assert {"AVX2", "FMA", "F16C"} <= compiled
    assert not {f for f in compiled if f.startswith(("AVX512", "AMX", "AVX_VNNI"))}, compiled
