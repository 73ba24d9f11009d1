import { parseName } from "./names.ts";
import {
  buildError,
  buildResponse,
  CLASS_IN,
  isQuestion,
  opcodeOf,
  RCODE,
  readQuestion,
  TYPE_A,
} from "./wire.ts";
import type { Zone } from "./zone.ts";

/** What to do with one incoming message. */
export type Decision =
  | { kind: "reply"; message: Uint8Array }
  | { kind: "forward" }
  | { kind: "drop" };

/** The largest UDP answer without EDNS (RFC 1035); TCP answers may use 65535. */
export const UDP_MAX = 512;

/**
 * Decides the answer to one DNS message from the loaded zone: names under `.internal` are
 * answered here with TTL-0 A records or NXDOMAIN, other record types get an empty NOERROR, names outside
 * `.internal` are forwarded. Responses are dropped, unreadable queries get FORMERR, opcodes other than QUERY get
 * NOTIMP.
 */
export function decide(zone: Zone, message: Uint8Array, maxSize: number): Decision {
  const read = readQuestion(message);
  if (read === undefined) return { kind: "drop" };
  if (!isQuestion(read)) return { kind: "reply", message: buildError(message, read, RCODE.FORMERR) };
  if (opcodeOf(read.flags) !== 0) return { kind: "reply", message: buildError(message, read, RCODE.NOTIMP) };
  const query = parseName(read.name);
  if (query.kind === "forward") return { kind: "forward" };
  if (read.type !== TYPE_A || read.qclass !== CLASS_IN) {
    return { kind: "reply", message: buildResponse(message, read, RCODE.NOERROR, [], maxSize) };
  }
  const addresses = zone.addresses(query);
  const rcode = addresses.length > 0 ? RCODE.NOERROR : RCODE.NXDOMAIN;
  return { kind: "reply", message: buildResponse(message, read, rcode, addresses, maxSize) };
}
