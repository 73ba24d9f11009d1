# Shared by bin/ployz and bin/ployzd (sourced, not run). Expects $root.
find_deno() {
  for candidate in "$root/deno" "$root/.tools/node_modules/@deno/linux-x64-glibc/deno" \
    "$root/.tools/node_modules/@deno/linux-arm64-glibc/deno" "$root/.tools/node_modules/@deno/darwin-arm64/deno" \
    "$root/.tools/node_modules/@deno/darwin-x64/deno"; do
    if [ -x "$candidate" ]; then
      echo "$candidate"
      return 0
    fi
  done
  echo "ployz: cannot find the pinned deno under $root (run: npm ci --prefix $root/.tools)" >&2
  return 1
}

# fresh_bundle BUNDLE: succeeds when BUNDLE exists and no source it was made from is newer (an edit, a checkout, an
# added or removed file: tools/build/bundle.ts). PLOYZ_LAUNCHER_BUNDLE=0 always runs the source.
fresh_bundle() {
  [ "${PLOYZ_LAUNCHER_BUNDLE:-1}" != 0 ] && [ -f "$1" ] || return 1
  newer=$(find "$root/cmd" "$root/lib" "$root/deno.json" "$root/deno.lock" -newer "$1" -print -quit 2>/dev/null) ||
    return 1
  [ -z "$newer" ]
}

# launch SET ENTRY [BUNDLE] ARGS...: runs ENTRY (or BUNDLE, when given as a third argument "--bundle=PATH" and fresh)
# under the permission set SET.
launch() {
  set_name=$1
  entry=$2
  shift 2
  case "${1:-}" in
    --bundle=*)
      if fresh_bundle "${1#--bundle=}"; then entry=${1#--bundle=}; fi
      shift
      ;;
  esac
  deno=$(find_deno)
  if [ "${PLOYZ_LAUNCHER_PRINT:-}" = 1 ]; then
    printf '%s\n' "$deno" run --quiet --no-prompt --cached-only --frozen --config "$root/deno.json" \
      ${launch_v8_flags:+"$launch_v8_flags"} "-P=$set_name" "$entry" "$@"
    exit 0
  fi
  exec "$deno" run --quiet --no-prompt --cached-only --frozen --config "$root/deno.json" \
    ${launch_v8_flags:+"$launch_v8_flags"} "-P=$set_name" "$entry" "$@"
}
