// Query building and answer reading for the unit tests, through dns-packet as an independent codec.
// @ts-types="npm:@types/dns-packet@5.6.5"
import * as dnsPacket from "dns-packet";
import { Buffer } from "node:buffer";
import type { DnsSpec } from "./spec.ts";

/** Encodes a query for `name` and `type` (default A) with id 4242 and RD set. */
export function query(name: string, type: dnsPacket.RecordType = "A", id = 4242): Uint8Array {
  return new Uint8Array(dnsPacket.encode({
    type: "query",
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type, name, class: "IN" }],
  }));
}

/** A decoded response; dns-packet decodes `rcode` although its types omit it. */
export type Decoded = dnsPacket.DecodedPacket & { rcode: string };

/** Decodes a response. */
export function decode(message: Uint8Array): Decoded {
  return dnsPacket.decode(Buffer.from(message)) as Decoded;
}

/** The A addresses of a decoded response. */
export function addressesOf(packet: dnsPacket.Packet): string[] {
  return (packet.answers ?? []).map((a) => (a as { data: string }).data);
}

/** A spec with two Services across two Machines, `m1` local. */
export function sampleSpec(): DnsSpec {
  return {
    format: 1,
    generated_at: "2026-01-01T00:00:00.000Z",
    machine_id: "m1",
    listen: ["127.0.0.1:5353"],
    services: [
      {
        project: "shop",
        service: "web",
        service_id: "5e71ce1d",
        replicas: [
          { address: "10.210.2.5", machine_id: "m2", container_id: "c2" },
          { address: "10.210.1.5", machine_id: "m1", container_id: "c1" },
          { address: "10.210.3.5", machine_id: "m3", container_id: "c3" },
        ],
      },
      { project: "shop", service: "db", replicas: [{ address: "10.210.2.9", machine_id: "m2" }] },
    ],
  };
}
