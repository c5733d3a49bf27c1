"""Will the installed llama.cpp run on this machine? A check the README's commands run before anything else.

A llama.cpp built with ``-march=native`` on one CPU can die with SIGSEGV or
SIGILL on another, or on the same CPU inside a VM that hides part of it (AMX
tiles are advertised in ``/proc/cpuinfo`` but the kernel refuses to enable
them). The library prints the instruction sets it was compiled for; each must
be usable here. Then one real completion runs in a child process, so a crash
is reported as a message instead of killing the caller.

Run as ``python -m tasks.llm.backends.llamacpp_check``: prints the system info
and exits 0, or exits 1 with what is wrong and how to rebuild.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import re
import signal
import subprocess
import sys
from pathlib import Path

#: llama.cpp's name of an instruction set → the /proc/cpuinfo flag that says the CPU has it.
CPU_FLAGS = {
    "SSE3": "pni", "SSSE3": "ssse3", "AVX": "avx", "AVX_VNNI": "avx_vnni", "AVX2": "avx2", "F16C": "f16c",
    "FMA": "fma", "BMI2": "bmi2", "AVX512": "avx512f", "AVX512_VBMI": "avx512vbmi", "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16", "AMX_INT8": "amx_int8",
}
REBUILD = "rebuild it portably: rm -rf .venv ~/.cache/babelbench/wheels && make venv (see the Makefile's LLAMA_CMAKE_ARGS)"

_SYS_ARCH_PRCTL = 158  # x86-64
_ARCH_REQ_XCOMP_PERM = 0x1023
_XFEATURE_XTILEDATA = 18


def compiled_features(system_info: str) -> set[str]:
    """The instruction sets a ``llama_print_system_info()`` line reports as compiled in (``NAME = 1``)."""
    return {name for name, value in re.findall(r"([A-Z0-9_]+)\s*=\s*(\d+)", system_info) if value != "0"}


def cpu_flags(cpuinfo: str) -> set[str]:
    """The flags of the first processor in a ``/proc/cpuinfo`` text."""
    match = re.search(r"^flags\s*:\s*(.*)$", cpuinfo, re.MULTILINE)
    return set(match.group(1).split()) if match else set()


def amx_usable() -> bool:
    """Whether the kernel lets this process use AMX tiles (it must grant the tile data state first)."""
    if platform.machine() != "x86_64" or not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return libc.syscall(_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA) == 0


def unusable_features(compiled: set[str], flags: set[str], *, amx_allowed: bool) -> list[str]:
    """The compiled-in instruction sets this machine cannot execute, each with why."""
    problems = []
    for feature in sorted(compiled & CPU_FLAGS.keys()):
        if CPU_FLAGS[feature] not in flags:
            problems.append(f"{feature} (this CPU has no {CPU_FLAGS[feature]})")
        elif feature.startswith("AMX") and not amx_allowed:
            problems.append(f"{feature} (the CPU advertises it but the kernel refuses AMX tiles to processes here)")
    return problems


_SMOKE = """
import llama_cpp
from tasks.llm.backends.llamacpp import packaged_gguf
model = llama_cpp.Llama(model_path=str(packaged_gguf()), n_ctx=256, n_threads=2, verbose=False)
out = model.create_completion(prompt="The capital of France is", max_tokens=2, temperature=0.0)
print(repr(out["choices"][0]["text"]))
"""


def smoke_completion(timeout_s: float = 300.0) -> str | None:
    """Complete one prompt with the packaged model in a child process; None when it worked, else what happened."""
    done = subprocess.run([sys.executable, "-c", _SMOKE], capture_output=True, text=True, timeout=timeout_s,
                          cwd=Path(__file__).resolve().parents[3])
    if done.returncode == 0:
        return None
    if done.returncode < 0:
        return f"a completion with the packaged model died with {signal.Signals(-done.returncode).name}"
    return f"a completion with the packaged model failed (exit {done.returncode}): {done.stderr.strip()[-500:]}"


def main() -> int:
    try:
        import llama_cpp
    except ImportError:
        print("llama.cpp check: llama-cpp-python is not installed (the local model needs the `local` extra)", file=sys.stderr)
        return 1
    info = llama_cpp.llama_print_system_info()
    info = info.decode() if isinstance(info, bytes) else str(info)
    print(f"llama.cpp {llama_cpp.__version__}: {info.strip()}")
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    problems = unusable_features(compiled_features(info), cpu_flags(cpuinfo), amx_allowed=amx_usable())
    if problems:
        print(f"llama.cpp check: the installed library uses instructions this machine cannot run: {'; '.join(problems)}; {REBUILD}",
              file=sys.stderr)
        return 1
    crash = smoke_completion()
    if crash:
        print(f"llama.cpp check: {crash}; {REBUILD}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
