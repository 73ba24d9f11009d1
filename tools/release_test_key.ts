// The TEST release key: `deno task dist` signs with it when no real key is given, and tests sign their releases
// with it. Installers trust it only when told (PLOYZ_RELEASE_PUBLIC_KEY, local or http:// sources only), so a
// release signed with it never installs from a real https source.

/** Base64 of the test key's 32-byte Ed25519 secret. Public on purpose: it signs nothing real. */
export const TEST_RELEASE_SECRET_KEY = "UMOaatnmHBWF+h/7FxbI0+K1cbR41Jtquxb3dHcB90g=";

/** Base64 of the test key's public half, for `PLOYZ_RELEASE_PUBLIC_KEY`. */
export const TEST_RELEASE_PUBLIC_KEY = "7xrFtCQsBCS6C5qosv5qwc192u4n57RcjyOvH0maaOE=";
