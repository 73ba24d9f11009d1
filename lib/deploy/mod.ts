/**
 * Deploy: Compose loading and the Docker adapter a Machine's daemon uses for its own containers.
 *
 * A Deploy is client-first and bounded (docs/bets.md, bets 3, 4, 10): the CLI loads the Compose file into a
 * normalized Project, plans against a Snapshot, and asks each Machine to act; each Machine re-checks ownership and
 * admission against its own Docker before any mutation.
 *
 * @module
 */

export * from "./compose/mod.ts";
export * from "./docker/mod.ts";
export * from "./plan/mod.ts";
export * from "./execute/mod.ts";
