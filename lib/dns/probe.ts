import { readDnsSpec } from "./spec.ts";
import { messageOf } from "../util/mod.ts";

/** Whether this build can serve a spec: a one-line summary, or the reason it cannot with an error code. */
export type ProbeResult =
  | { ok: true; summary: string }
  | { ok: false; code: "unavailable" | "unsupported" | "invalid_argument"; reason: string };

/**
 * `ployzd dns --probe`: can this binary, in this runtime, serve the spec at `path`? True only when the spec
 * exists, its format is known, every listen address and upstream is valid, and the runtime can bind the sockets
 * Internal DNS uses.
 */
export async function probeDnsSpec(path: string): Promise<ProbeResult> {
  if (typeof Deno.listenDatagram !== "function") {
    return {
      ok: false,
      code: "unsupported",
      reason: "This runtime cannot serve DNS: Deno.listenDatagram needs --unstable-net",
    };
  }
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    const message = messageOf(error);
    return { ok: false, code: "unavailable", reason: `Cannot read the spec "${path}": ${message}` };
  }
  const reading = readDnsSpec(text);
  if (reading.kind === "unsupported") {
    return { ok: false, code: "unsupported", reason: `Cannot serve the spec "${path}": ${reading.reason}` };
  }
  if (reading.kind === "invalid") {
    return {
      ok: false,
      code: "invalid_argument",
      reason: `Cannot serve the spec "${path}": ${reading.reason}`,
    };
  }
  const { spec, listen } = reading;
  return {
    ok: true,
    summary: `Can serve the spec "${path}": format ${spec.format}, ${spec.services.length} services, ` +
      `${listen.length} listen addresses`,
  };
}
