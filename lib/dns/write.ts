import { writeFileAtomic } from "../util/mod.ts";
import type { DnsSpec } from "./spec.ts";

/**
 * Writes dns.json atomically and durably, so the Internal DNS process sees the old spec or the new one, never half
 * of one. The daemon is the only writer.
 */
export async function writeDnsSpec(path: string, spec: DnsSpec): Promise<void> {
  await writeFileAtomic(path, JSON.stringify(spec, null, 2) + "\n");
}
