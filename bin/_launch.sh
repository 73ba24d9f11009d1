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

launch() {
  set_name=$1
  entry=$2
  shift 2
  deno=$(find_deno)
  if [ "${PLOYZ_LAUNCHER_PRINT:-}" = 1 ]; then
    printf '%s\n' "$deno" run --quiet --no-prompt --cached-only --frozen --config "$root/deno.json" \
      ${launch_v8_flags:+"$launch_v8_flags"} "-P=$set_name" "$entry" "$@"
    exit 0
  fi
  exec "$deno" run --quiet --no-prompt --cached-only --frozen --config "$root/deno.json" \
    ${launch_v8_flags:+"$launch_v8_flags"} "-P=$set_name" "$entry" "$@"
}
