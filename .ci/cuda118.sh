#!/usr/bin/env bash
# Assemble a relocatable CUDA 11.8 home (nvcc, cuobjdump, cicc, headers, libcudart) in $1
# without changing the system: Debian non-free packages are fetched with a private apt
# configuration and unpacked with dpkg-deb; the runtime headers come from PyPI wheels.
set -euo pipefail
dest=${1:?usage: cuda118.sh DEST}
if [ -x "$dest/bin/nvcc" ] && "$dest/bin/nvcc" --version | grep -q 'release 11.8'; then
  echo "CUDA 11.8 already at $dest"; exit 0
fi
# Debian bookworm is the release whose non-free nvidia-cuda-toolkit is 11.8
# (packages.debian.org/bookworm/nvidia-cuda-toolkit; the check below insists on 11.8); fetched from
# this machine's Debian mirror whatever release the machine runs. A mirror of another
# distribution (Ubuntu's carries 11.5 in jammy and 12.0 in noble) has no such suite.
suite=bookworm
. /etc/os-release
if [ "${ID:-}" != debian ]; then
  echo "CUDA 11.8: needs a Debian apt mirror (for $suite's nvidia-cuda-toolkit 11.8); this is ${PRETTY_NAME:-an unknown system}" >&2
  exit 3
fi
[ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || { echo "CUDA 11.8: debian-archive-keyring is not installed" >&2; exit 3; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The mirror this machine is configured with (deb822 or one-line sources), never a hard-coded host.
mirror=$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -n1 || true)
if [ -z "$mirror" ]; then
  mirror=$(grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null | grep -v security | awk '{for(i=2;i<=NF;i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' | head -n1)
fi
[ -n "$mirror" ] || { echo "no Debian mirror configured in apt sources" >&2; exit 1; }
mkdir -p "$scratch/apt/etc/none" "$scratch/apt/lists/partial" "$scratch/apt/cache/archives/partial" "$scratch/debs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main contrib non-free" \
  > "$scratch/apt/etc/sources.list"
APTO=(-o "Dir::Etc::SourceList=$scratch/apt/etc/sources.list" -o "Dir::Etc::SourceParts=$scratch/apt/etc/none"
      -o "Dir::State::Lists=$scratch/apt/lists" -o "Dir::Cache=$scratch/apt/cache")
apt-get "${APTO[@]}" -qq update
(cd "$scratch/debs" && apt-get "${APTO[@]}" -qq download nvidia-cuda-toolkit libnvvm4 libcudart11.0 nvidia-cuda-toolkit-gcc)
for d in "$scratch"/debs/*.deb; do dpkg-deb -x "$d" "$scratch/root"; done
python3 -m pip download -q --no-deps -d "$scratch/wheels" nvidia-cuda-runtime-cu11==11.8.89 nvidia-cuda-nvcc-cu11==11.8.89
for w in "$scratch"/wheels/*.whl; do python3 -m zipfile -e "$w" "$scratch/wheels/x"; done
r=$scratch/root
tmp="$dest.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp/bin" "$tmp/nvvm/bin" "$tmp/nvvm/lib64" "$tmp/nvvm/libdevice" "$tmp/include" "$tmp/lib"
for t in nvcc cudafe++ ptxas fatbinary nvlink nvprune cuobjdump bin2c nvdisasm cu++filt; do
  for src in "$r/usr/lib/nvidia-cuda-toolkit/bin/$t" "$r/usr/bin/$t"; do   # the first is the real binary
    if [ -f "$src" ]; then cp -L "$src" "$tmp/bin/$t"; break; fi
  done
done
cp -r "$r/usr/lib/nvidia-cuda-toolkit/bin/crt" "$tmp/bin/crt"
cp -L "$r/usr/lib/nvidia-cuda-toolkit/bin/cicc" "$tmp/nvvm/bin/cicc" 2>/dev/null || cp -L "$(find "$r" -name cicc -type f | head -n1)" "$tmp/nvvm/bin/cicc"
cp -a "$r"/usr/lib/x86_64-linux-gnu/libnvvm.so* "$tmp/nvvm/lib64/"
cp -L "$(find "$r" "$scratch/wheels/x" -name 'libdevice.10.bc' | head -n1)" "$tmp/nvvm/libdevice/"
cp -a "$r"/usr/lib/x86_64-linux-gnu/libcudart.so* "$tmp/lib/"
so=$(ls "$tmp"/lib/libcudart.so.* | head -n1); ln -sf "$(basename "$so")" "$tmp/lib/libcudart.so"
cp -r "$scratch"/wheels/x/nvidia/cuda_runtime/include/. "$tmp/include/"
cp -r "$scratch"/wheels/x/nvidia/cuda_nvcc/include/. "$tmp/include/"
cat > "$tmp/bin/nvcc.profile" <<'PROFILE'
TOP              = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib:$(TOP)/nvvm/lib64:
PATH            += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib"
PROFILE
"$tmp/bin/nvcc" --version | grep -q 'release 11.8'
rm -rf "$dest"; mkdir -p "$(dirname "$dest")"; mv "$tmp" "$dest"
echo "CUDA 11.8 assembled at $dest"
