/**
 * The daemon's side of Internal DNS: rendering the spec and writing it atomically, and the exit status by which
 * `ployzd dns` says the spec is too new for it.
 *
 * Why a narrower door than `lib/dns/mod.ts`: that one also carries the DNS server `ployzd dns` runs (the zone,
 * the wire format, forwarding), which `ployzd serve` never runs itself. `tests/module_graph_test.ts` holds serve to
 * this door.
 *
 * @module
 */

export { type DnsReplicaInput, type DnsServiceInput, type DnsSpecInput, renderDnsSpec } from "../render.ts";
export { DNS_EXIT_UNSUPPORTED_SPEC, type DnsSpec } from "../spec.ts";
export { writeDnsSpec } from "../write.ts";
