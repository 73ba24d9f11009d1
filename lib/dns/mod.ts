/**
 * Internal DNS: `ployzd dns` answers for the Cluster's Services from the spec the daemon publishes at
 * `/run/ployz/dns.json`, and forwards every other name to the host's resolvers.
 *
 * The spec is a frozen format ({@link DnsSpec}): the daemon renders it ({@link renderDnsSpec}) and is its only
 * writer ({@link writeDnsSpec}, atomic); the DNS process reads it tolerantly (`spec.ts`) and refuses only
 * a `format` it does not know. Names: `svc.project.internal`, `svc.project.nearest.internal`,
 * `<id>.id.lookup.internal` and `svc.project.<machine-id>.machine.internal`, answered with TTL-0 A records;
 * unknown `.internal` names get NXDOMAIN and other record types an empty NOERROR.
 *
 * Serving outlives the daemon ({@link runDns}): nothing is bound before the first spec loads, a bad spec keeps
 * the last good one, and a spec from a newer release hands the port back and ends the process. A restart overlaps
 * the old and new processes on the same addresses (UDP SO_REUSEADDR, TCP SO_REUSEPORT): start the new process,
 * wait for its "Serving spec" line, then SIGTERM the old one, which drains what it queued and exits. Under systemd
 * the daemon does the same with two alternating runtime units, `ployz-dns@a` and `ployz-dns@b` (lib/serving's
 * `systemdDnsRunner`): systemd cannot hand the sockets over instead, because Deno adopts no inherited UDP socket
 * (`node:dgram` `bind({fd})` refuses it, `Deno.listenDatagram` takes no fd). This needs `--unstable-net`
 * (`Deno.listenDatagram`).
 *
 * @module
 */

// Only what other areas and the programs use; the answering, the zone and the wire stay inside the area.
export { probeDnsSpec, type ProbeResult } from "./probe.ts";
export { type DnsReplicaInput, type DnsServiceInput, type DnsSpecInput, renderDnsSpec } from "./render.ts";
export { type DnsExit, runDns, type RunDnsOptions } from "./run.ts";
export { DNS_EXIT_UNSUPPORTED_SPEC, type DnsReplica, type DnsService, type DnsSpec } from "./spec.ts";
export { writeDnsSpec } from "./write.ts";
