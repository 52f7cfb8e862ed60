#!/usr/bin/env bash
# tools/gpu_bundle.sh OUT_DIR: a self-contained bundle to run Sluice on the lent GPU machine
# (Ubuntu 24.04, NVIDIA driver, CUDA 13 under /usr/local/cuda, cuDNN 9 only inside
# /opt/torch/.venv; none of our Debian libraries). It holds:
#   OUT_DIR/payload.tar.xz: bin/ and lib/, unpacked by run.sh on first use:
#     bin/          train and every GPU cc_test (//engine/runtime/gpu, //engine/kernels/gpu,
#                   //inputs/gpu),
#                   built with --config=cuda and stripped
#     lib/          the shared libraries they need from this machine's /lib and /usr/lib
#                   (absl, protobuf, gRPC, RocksDB, prometheus-cpp, ...), but not glibc,
#                   libstdc++/libgcc_s (the GPU machine's are newer) nor the NVIDIA ones
#   OUT_DIR/data/   the Fashion-MNIST files the configs read, each stored as NAME.xz (the
#                   inflated file, xz-compressed: 4 MB smaller than the .gz for the train
#                   images) and written back as NAME (gzip) by run.sh on first use
#   OUT_DIR/configs/ the experiment configs with data paths pointing at OUT_DIR/data: run.sh
#                   writes them from configs_src/ on every run, for wherever the bundle lies
#                   (into ${TMPDIR:-/tmp}/sluice_bundle_configs when the bundle is read-only)
#   OUT_DIR/run.sh  sets LD_LIBRARY_PATH and runs a command:
#                     OUT_DIR/run.sh train OUT_DIR/configs/fashion_cnn.pbtxt --set train.steps=200
#                     OUT_DIR/run.sh gpu_device_test
#                   (a bare name runs bin/<name>). Instead of the rewritten configs,
#                   the original ones work with overrides such as
#                   --set input.train.idx.images=OUT_DIR/data/train-images-idx3-ubyte.gz
# Usage: tools/gpu_bundle.sh OUT_DIR   (run from the repository root)
set -euo pipefail

out="${1:?usage: tools/gpu_bundle.sh OUT_DIR}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -rf "$out/bin" "$out/lib" "$out/data" "$out/configs" "$out/configs_src" "$out/.unpacked" "$out/payload.tar.xz"
mkdir -p "$out/bin" "$out/lib" "$out/data" "$out/configs" "$out/configs_src"

tests=$(bazel query --noshow_progress 'kind(cc_test, //engine/kernels/gpu/... + //engine/runtime/gpu/... + //inputs/gpu/...)' 2>/dev/null || true)
echo "building train and: ${tests:-<no GPU tests>}" >&2
# shellcheck disable=SC2086
nice bazel build --config=cuda //cmd/train $tests

bins=("bazel-bin/cmd/train/train")
for t in $tests; do
  pkg="${t#//}"; pkg="${pkg%%:*}"; name="${t##*:}"
  bins+=("bazel-bin/$pkg/$name")
done

# Libraries not to carry: the C runtime and compiler support (the GPU machine's glibc 2.39 and
# libstdc++ are newer and compatible) and NVIDIA's (the driver's libcuda; cuBLAS from
# /usr/local/cuda; cuDNN from PyTorch's environment).
skip='^(libc|libm|libstdc\+\+|ld-linux-x86-64|libpthread|libdl|librt|libgcc_s|libcuda|libcublas|libcublasLt|libcudnn[a-z_]*|libnvrtc|libnvJitLink|linux-vdso)\.so'
for b in "${bins[@]}"; do
  strip -o "$out/bin/$(basename "$b")" "$b"
  chmod u+w,+x "$out/bin/$(basename "$b")"
  ldd "$b" | awk '/=> \// {print $1, $3}' | while read -r soname path; do
    if [[ "$soname" =~ $skip ]]; then continue; fi
    case "$path" in
      /lib/*|/usr/lib/*|*/_solib_*/*) ;;  # system libraries; Bazel's own (dynamically linked tests)
      *) continue ;;
    esac
    [[ -e "$out/lib/$soname" ]] || strip --strip-unneeded -o "$out/lib/$soname" "$(readlink -f "$path")"
  done
done

# Data: every absolute data path the configs name (Fashion-MNIST today).
data_dirs=$(grep -ho '"/[^"]*datasets/[^"]*"' configs/*.pbtxt | tr -d '"' | xargs -n1 dirname | sort -u)
for f in $(grep -ho '"/[^"]*datasets/[^"]*"' configs/*.pbtxt | tr -d '"' | sort -u); do
  # IDX readers and the peers' loaders take gzip or plain files; xz is smaller to carry.
  if [[ "$f" == *.gz ]]; then
    gzip -dc "$f" | nice xz -9 -T2 > "$out/data/$(basename "$f").xz"
  else
    nice xz -9 -T2 -c "$f" > "$out/data/$(basename "$f").xz"
  fi
done
cp configs/*.pbtxt "$out/configs_src/"
printf '%s\n' $data_dirs > "$out/configs_src/DATA_DIRS"

# Binaries and libraries travel as one xz archive (about a fifth of their size: -9's
# 64 MiB window also finds the code the test binaries share, 8 MB less than -6's);
# run.sh unpacks it on first use.
tar -C "$out" -cf - bin lib | nice xz -9 -T2 > "$out/payload.tar.xz"
rm -rf "$out/bin" "$out/lib"

cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs a command of this bundle with its libraries: run.sh train CONFIG [flags] | run.sh TEST.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# Unpack bin/ and lib/ beside this script (or under $TMPDIR when the bundle is read-only),
# again whenever the payload changed.
x="$here/.unpacked"
if ! mkdir -p "$x" 2>/dev/null || [[ ! -w "$x" ]]; then
  x="${TMPDIR:-/tmp}/sluice_bundle_$(cksum < "$here/payload.tar.xz" | cut -d' ' -f1)"
fi
stamp="$(cksum < "$here/payload.tar.xz")"
if [[ ! -f "$x/STAMP" || "$(cat "$x/STAMP")" != "$stamp" ]]; then
  rm -rf "$x/bin" "$x/lib"
  mkdir -p "$x"
  tar -C "$x" -xJf "$here/payload.tar.xz"
  echo "$stamp" > "$x/STAMP"
fi
# The data files travel as NAME.xz; the readers want NAME (gzip when NAME ends in .gz, as the
# configs name it), written beside them, or under $x when the bundle is read-only.
data="$here/data"
if [[ ! -w "$data" ]]; then data="$x/data"; mkdir -p "$data"; fi
for z in "$here"/data/*.xz; do
  [[ -e "$z" ]] || continue
  f="$data/$(basename "${z%.xz}")"
  [[ -s "$f" ]] && continue
  if [[ "$f" == *.gz ]]; then
    xz -dc "$z" | gzip -1 > "$f.tmp.$$" || { echo "run.sh: cannot write $f" >&2; exit 1; }
  else
    xz -dc "$z" > "$f.tmp.$$" || { echo "run.sh: cannot write $f" >&2; exit 1; }
  fi
  mv "$f.tmp.$$" "$f"
done
cudnn=""
for d in /opt/torch/.venv/lib/python3*/site-packages/nvidia/cudnn/lib; do
  [[ -d "$d" ]] && cudnn="$d"
done
[[ -n "$cudnn" ]] || echo "run.sh: no cuDNN under /opt/torch/.venv (cuDNN kernels will fail)" >&2
export LD_LIBRARY_PATH="$x/lib:/usr/local/cuda/lib64${cudnn:+:$cudnn}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Point the configs' data paths at this bundle's data (wherever the bundle lies now).
cfg="$here/configs"
if [[ ! -w "$cfg" ]]; then cfg="${TMPDIR:-/tmp}/sluice_bundle_configs"; mkdir -p "$cfg"; fi
for c in "$here"/configs_src/*.pbtxt; do
  tmp="$cfg/.$(basename "$c").tmp"
  cp "$c" "$tmp"
  while read -r d; do
    [[ -n "$d" ]] && sed -i "s#\"$d/#\"$data/#g" "$tmp"
  done < "$here/configs_src/DATA_DIRS"
  mv "$tmp" "$cfg/$(basename "$c")"
done
[[ $# -ge 1 ]] || { echo "usage: run.sh COMMAND [ARGS...]" >&2; exit 2; }
cmd="$1"; shift
if [[ "$cmd" != */* && -x "$x/bin/$cmd" ]]; then cmd="$x/bin/$cmd"; fi
exec "$cmd" "$@"
RUN
chmod +x "$out/run.sh"

echo "bundle: $out" >&2
du -sh "$out" "$out/payload.tar.xz" "$out/data" >&2
size_mib=$(du -sm "$out" | cut -f1)
if (( size_mib >= 60 )); then echo "WARNING: bundle is ${size_mib} MiB (over 60 MiB)" >&2; fi
echo "$out"
