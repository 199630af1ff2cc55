#!/bin/bash
# FlashAttention-4 (flash-attn-4 4.0.0b36 on CuTe DSL 4.8.1) for the side-by-side benchmark
# (scripts/fa4_wheels.sh builds the carried folders, libs-core included),
# from wheels carried in .whl/ (gitignored; docs/performance.md, "FlashAttention-4"). The CUDA 13
# flavour of nvidia-cutlass-dsl-libs (92 MB) exceeds one device call's 64 MiB, so it travels as
# an xz tarball in two halves over two consecutive calls: the call that carries .whl/cu13.part1
# keeps it in /tmp; the one that carries .whl/cu13.part2 joins them and installs everything
# into /tmp/site. Prints the PYTHONPATH entries to add (the CuTe DSL's .pth, which --target
# installs do not run, puts dsl_packages on sys.path).
set -eu
SITE=/tmp/site
if [ -f .whl/cu13.part1 ]; then cp .whl/cu13.part1 /tmp/fa4_cu13.part1; echo "kept part 1"; fi
if [ -f .whl/cu13.part2 ] && [ -f /tmp/fa4_cu13.part1 ]; then
    mkdir -p "$SITE"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$SITE" .whl/*.whl
    cat /tmp/fa4_cu13.part1 .whl/cu13.part2 > /tmp/fa4_cu13.tar.xz
    python3 -c "import tarfile, sys; tarfile.open('/tmp/fa4_cu13.tar.xz').extractall(sys.argv[1])" "$SITE"
    echo "installed into $SITE"
fi
