#!/bin/sh
# Build tinyformer's container image (deploy/Dockerfile) where no registry for base
# images can be reached, run it, and check it. By hand, as root, from anywhere:
#
#   deploy/build_image.sh              # base (once), wheelhouse, build, checks
#   deploy/build_image.sh --no-check   # build only
#   deploy/build_image.sh --check      # checks only (the image exists)
#
# Everything comes from Debian's archive and this machine's disk:
# 1. the base: `mmdebstrap --variant=minbase bookworm` makes a Debian root file system,
#    `podman import` makes it a local image (BASE_IMAGE; made once, then reused);
# 2. the wheelhouse: `pip download` of requirements.txt into WORK/wheelhouse, from the
#    indexes and folders this machine's pip is configured with (the pinned torch CPU
#    wheel lies in /opt/wheels here), for the image's Python (Debian's 3.11.2);
# 3. the build: `podman build` FROM the base, Debian's python3 and nginx from Debian's
#    archive, the wheelhouse served to the build over http on 127.0.0.1 and installed
#    with no index (pip never reaches the internet);
# 4. the checks: one process (deploy.serve) with its port published (-p), the image's
#    HEALTHCHECK, a page's first run; then the class server (deploy.classroom, two
#    processes behind nginx) inside, against a redis-server outside with a password.
#
# Podman runs with runc and cgroupfs, and a containers.conf whose default_ulimits is
# empty: this machine refuses podman's default rlimits and crun's cgroup mode.
# Needs: apt-get install mmdebstrap podman runc redis-server (and curl); the repository's
# .venv for pip download and the checks. Ports 8720-8749 of 127.0.0.1.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
IMAGE=${IMAGE:-localhost/tinyformer:latest}
BASE_IMAGE=${BASE_IMAGE:-localhost/debian-bookworm-minbase:latest}
WORK=${WORK:-/var/tmp/tinyformer-image}
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
IMAGE_PYTHON=3.11.2  # Debian bookworm's python3
WHEEL_PORT=8731
SERVE_PORT=8741      # one process, published from the container's 8501
CLASS_PORT=8743      # the class server's nginx, in the host's network
REDIS_PORT=8722
STAGE=softmax

build=1
check=1
case "${1:-}" in
  --no-check) check=0 ;;
  --check) build=0 ;;
  "") ;;
  *) echo "usage: $0 [--no-check | --check]" >&2; exit 2 ;;
esac

say() { printf 'build_image: %s\n' "$*" >&2; }
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc | sed 's/^\./0./; s/\(\.[0-9]\)[0-9]*$/\1/'; }

missing=""
for tool in mmdebstrap podman runc redis-server redis-cli curl bc; do
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
  say "missing:$missing (Debian: apt-get install mmdebstrap podman runc redis-server curl bc)"
  exit 2
fi
[ -x "$PYTHON" ] || { say "no Python at $PYTHON (set PYTHON=...)"; exit 2; }

mkdir -p "$WORK"
cat > "$WORK/containers.conf" <<'EOF'
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
export CONTAINERS_CONF="$WORK/containers.conf"

started=""  # what to stop on exit: container names, and pids
cleanup() {
  for name in tinyformer-check-serve tinyformer-check-class; do
    podman rm -f -t 5 "$name" >/dev/null 2>&1 || true
  done
  for pid in $started; do kill "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

wait_health() {  # URL, seconds: until it answers 200
  t=0
  while [ "$t" -lt $(( $2 * 5 )) ]; do
    curl -sf -o /dev/null "$1" && return 0
    sleep 0.2
    t=$((t + 1))
  done
  return 1
}

if [ "$build" = 1 ]; then
  # --- 1. the base -----------------------------------------------------------------
  if podman image exists "$BASE_IMAGE"; then
    say "base $BASE_IMAGE exists (podman rmi it to make it again)"
  else
    t0=$(now)
    mmdebstrap --variant=minbase bookworm "$WORK/rootfs.tar" >"$WORK/mmdebstrap.log" 2>&1 \
      || { say "mmdebstrap failed, see $WORK/mmdebstrap.log"; exit 1; }
    podman import "$WORK/rootfs.tar" "$BASE_IMAGE" >/dev/null
    say "base $BASE_IMAGE: mmdebstrap and import in $(since "$t0") s," \
        "rootfs.tar $(du -m "$WORK/rootfs.tar" | cut -f1) MiB"
    rm -f "$WORK/rootfs.tar"
  fi

  # --- 2. the wheelhouse -----------------------------------------------------------
  t0=$(now)
  mkdir -p "$WORK/wheelhouse"
  "$PYTHON" -m pip download --quiet --only-binary=:all: --python-version "$IMAGE_PYTHON" \
      -r "$ROOT/requirements.txt" -d "$WORK/wheelhouse" 2>"$WORK/pip.log"
  # pip evaluates python_full_version markers against the interpreter running it (3.11.x
  # here), not --python-version: redis wants async-timeout below 3.11.3, as the image has.
  "$PYTHON" -m pip download --quiet --only-binary=:all: "async-timeout>=4.0.3" \
      -d "$WORK/wheelhouse" 2>>"$WORK/pip.log"
  say "wheelhouse: $(ls "$WORK/wheelhouse" | wc -l) wheels," \
      "$(du -sm "$WORK/wheelhouse" | cut -f1) MiB, in $(since "$t0") s"

  # --- 3. the build ------------------------------------------------------------------
  "$PYTHON" -m http.server --bind 127.0.0.1 "$WHEEL_PORT" --directory "$WORK/wheelhouse" \
      >"$WORK/wheelhouse.log" 2>&1 &
  wheels=$!
  started="$started $wheels"
  wait_health "http://127.0.0.1:$WHEEL_PORT/" 10 || { say "the wheelhouse server did not start"; exit 1; }
  t0=$(now)
  # --network host: the build's RUN steps reach Debian's archive and the wheelhouse.
  podman build --network host --format docker \
      --ignorefile "$ROOT/deploy/Dockerfile.dockerignore" -f "$ROOT/deploy/Dockerfile" \
      --build-arg BASE="$BASE_IMAGE" --build-arg WHEELS="http://127.0.0.1:$WHEEL_PORT/" \
      -t "$IMAGE" "$ROOT" >"$WORK/build.log" 2>&1 \
    || { say "podman build failed, see $WORK/build.log"; tail -20 "$WORK/build.log" >&2; exit 1; }
  kill "$wheels" 2>/dev/null || true
  size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
  say "image $IMAGE built in $(since "$t0") s: $((size / 1000000)) MB"
fi

[ "$check" = 1 ] || exit 0
podman image exists "$IMAGE" || { say "no image $IMAGE: build it first"; exit 1; }

# --- 4a. one process, its port published ------------------------------------------------
t0=$(now)
podman run -d --rm --name tinyformer-check-serve -p "127.0.0.1:$SERVE_PORT:8501" \
    --health-interval disable "$IMAGE" \
    python -m deploy.serve --address 0.0.0.0 --port 8501 >/dev/null 2>>"$WORK/podman.log"
wait_health "http://127.0.0.1:$SERVE_PORT/_stcore/health" 120 \
  || { say "the process did not answer"; podman logs tinyformer-check-serve >&2; exit 1; }
say "one process (deploy.serve, -p $SERVE_PORT:8501): health answered $(since "$t0") s after podman run"
check_page() {  # what to call this moment
  out=$("$PYTHON" "$ROOT/deploy/image_check.py" page --port "$SERVE_PORT" --stage "$STAGE") \
    || { say "the page check failed"; exit 1; }
  say "  $1: $out"
}
check_page "at once"
page=$(curl -s -o /dev/null -w '%{http_code}, %{size_download} bytes' \
  "http://127.0.0.1:$SERVE_PORT/$STAGE")
say "  GET /$STAGE: $page"
t=0
until podman logs tinyformer-check-serve 2>&1 | grep -q "tinyformer warm-up:"; do
  sleep 0.5; t=$((t + 1)); [ "$t" -lt 600 ] || break
done
say "  $(podman logs tinyformer-check-serve 2>&1 | grep -o 'tinyformer warm-up:.*' | head -n 1)" \
    "(done $(since "$t0") s after podman run)"
check_page "warm"
podman healthcheck run tinyformer-check-serve >/dev/null 2>&1 \
  && say "  the image's HEALTHCHECK: healthy" || say "  the image's HEALTHCHECK: UNHEALTHY"
say "  resident memory: $(podman stats --no-stream --format '{{.MemUsage}}' tinyformer-check-serve)"
t0=$(now)
podman stop -t 30 tinyformer-check-serve >/dev/null 2>&1
say "  podman stop: $(since "$t0") s"

# --- 4b. the class server inside, Redis outside --------------------------------------------
password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
mkdir -p "$WORK/redis"
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --protected-mode yes --save "" \
    --appendonly no --requirepass "$password" --dir "$WORK/redis" \
    --logfile "$WORK/redis/redis.log" --daemonize no &
redis=$!
started="$started $redis"
sleep 0.5
store="redis://:$password@127.0.0.1:$REDIS_PORT/0"
t0=$(now)
# The host's network: the container's class server reaches this machine's redis-server
# on 127.0.0.1, as an app machine reaches the school's (docs/deploy.md, section 3).
podman run -d --rm --name tinyformer-check-class --network host \
    --health-interval disable -e TINYFORMER_CLASS_STORE="$store" "$IMAGE" \
    python -m deploy.classroom --address 127.0.0.1 --port "$CLASS_PORT" --processes 2 \
    >/dev/null 2>>"$WORK/podman.log"
wait_health "http://127.0.0.1:$CLASS_PORT/_stcore/health" 180 \
  || { say "the class server did not answer"; podman logs tinyformer-check-class >&2; exit 1; }
say "class server in the container (2 processes behind nginx, the store: Redis outside):" \
    "nginx answered $(since "$t0") s after podman run"
out=$("$PYTHON" "$ROOT/deploy/image_check.py" class --port "$CLASS_PORT" --stage "$STAGE") \
  || { say "the class check failed"; podman logs tinyformer-check-class 2>&1 | tail -20 >&2; exit 1; }
printf '%s\n' "$out" | sed 's/^/build_image:   /' >&2
keys=$(redis-cli -p "$REDIS_PORT" --no-auth-warning -a "$password" --scan \
  --pattern 'tinyformer:class:*' | wc -l)
say "  redis-server outside holds $keys tinyformer:class:* keys"
[ "$keys" -gt 0 ] || { say "  the class is not in Redis"; exit 1; }
code=$(printf '%s\n' "$out" | sed -n 's/^class \([A-Z0-9]*\):.*/\1/p' | head -n 1)
kill "$redis"
wait "$redis" 2>/dev/null || true
out=$("$PYTHON" "$ROOT/deploy/image_check.py" down --port "$CLASS_PORT" --stage "$STAGE" \
  --code "$code") || { say "the store-down check failed"; exit 1; }
say "  redis-server stopped: $out"
t0=$(now)
podman stop -t 30 tinyformer-check-class >/dev/null 2>&1
say "  podman stop: $(since "$t0") s"
say "checks passed"
