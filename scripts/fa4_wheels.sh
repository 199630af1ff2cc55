#!/bin/bash
# Build, on the CPU host (pip reaches the registry), the two carried folders that
# scripts/fa4_install.sh installs FlashAttention-4 from on the device (which has no registry):
#   .whl/cu13.part1   the first half of the CuTe DSL's cu13 library (an xz tarball of the
#                     nvidia-cutlass-dsl-libs-cu13 wheel's files: 92 MB zipped, 66 MB as xz)
#   .whl_b/           its second half (cu13.part2) and every other wheel
# One device call carries .whl (fa4_install.sh keeps part 1 in /tmp); the next, on the same
# warm machine (it is given back after ~30 s idle), carries .whl_b and runs
#   mkdir -p .whl && cp .whl_b/* .whl/ && bash scripts/fa4_install.sh
# then imports with PYTHONPATH=.:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages.
# The Python half of the CuTe DSL (cutlass/cute) is nvidia-cutlass-dsl-libs-core, which
# libs-base requires; without it `import flash_attn.cute` fails with "No module named
# 'cutlass.cute'" (sessions 8 and 15). torch, cuda-bindings and numpy are on the device already.
set -eu
cd "$(dirname "$0")/.."
grep -qx "/.whl_b/" .git/info/exclude 2>/dev/null || echo "/.whl_b/" >> .git/info/exclude
tmp=$(mktemp -d)
plat="--python-version 3.12 --only-binary=:all: --platform manylinux_2_28_x86_64
      --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
pip download --no-deps -q $plat -d "$tmp" flash-attn-4==4.0.0b36 nvidia-cutlass-dsl==4.8.1 \
    nvidia-cutlass-dsl-libs-base==4.8.1 nvidia-cutlass-dsl-libs-core==4.8.1 \
    nvidia-cutlass-dsl-libs-cu13==4.8.1 einops "apache-tvm-ffi>=0.1.11,<0.2" torch-c-dlpack-ext \
    quack-kernels protobuf
mkdir -p "$tmp/x" .whl .whl_b
(cd "$tmp/x" && python3 -m zipfile -e "$tmp"/nvidia_cutlass_dsl_libs_cu13-*.whl .)
tar -C "$tmp/x" -cf - . | xz -6 -T2 > "$tmp/cu13.tar.xz"
split -n 2 -d "$tmp/cu13.tar.xz" "$tmp/cu13.part"
mv "$tmp/cu13.part00" .whl/cu13.part1
mv "$tmp/cu13.part01" .whl_b/cu13.part2
rm "$tmp"/nvidia_cutlass_dsl_libs_cu13-*.whl
mv "$tmp"/*.whl .whl_b/
rm -rf "$tmp"
du -sh .whl .whl_b
