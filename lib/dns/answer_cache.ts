// Encoded UDP answers kept by question, so a repeated question costs a hash, a byte compare and a copy instead
// of a parse, a name lookup and an encode. The DNS process makes one per loaded zone, so a reload drops it.
import { decide, type Decision } from "./answer.ts";
import { parseName } from "./names.ts";
import { buildResponse, CLASS_IN, isQuestion, opcodeOf, RCODE, readQuestion, TYPE_A } from "./wire.ts";
import type { Zone } from "./zone.ts";

/** A name with more replicas than this is answered without the cache: one entry holds every rotation. */
const MAX_ROTATIONS = 16;

/** Bytes of encoded answers kept at most; past it the cache starts over, so a flood of names stays bounded. */
const MAX_BYTES = 4 << 20;

/** Answers to one question: the question bytes with the query's RD bit, and one response per rotation. */
interface Entry {
  rd: number;
  question: Uint8Array;
  responses: Uint8Array[];
  next: number;
}

/** The answers of one zone to questions it already saw over UDP. */
export interface AnswerCache {
  /** The answer to `message` with its id copied in, when the same question was answered from this zone before. */
  lookup(message: Uint8Array): Uint8Array | undefined;
  /** Decides `message` as {@link decide} does, remembering the answer when the question can be answered again. */
  decide(message: Uint8Array): Decision;
}

/**
 * Makes an empty cache of the answers `zone` gives within `maxSize` bytes. Only answers that depend on nothing
 * but the question bytes and the RD bit are kept (a QUERY with one question under `.internal`); each entry holds
 * every rotation of its replicas and serves them in turn, as the zone would.
 */
export function createAnswerCache(zone: Zone, maxSize: number): AnswerCache {
  let entries = new Map<number, Entry>();
  let bytes = 0;

  function remember(message: Uint8Array, end: number, responses: Uint8Array[]): void {
    const size = sizeOf(end - 12, responses);
    if (bytes + size > MAX_BYTES) {
      entries = new Map();
      bytes = 0;
    }
    const hash = questionHash(message, end);
    const old = entries.get(hash);
    if (old) bytes -= sizeOf(old.question.length, old.responses);
    // Stored with id 0: every hit copies the response and writes the query's id into the copy.
    for (const response of responses) response[0] = response[1] = 0;
    entries.set(hash, {
      rd: message[2] & 1,
      question: message.slice(12, end),
      responses,
      next: 1 % responses.length,
    });
    bytes += size;
  }

  return {
    lookup(message: Uint8Array): Uint8Array | undefined {
      const length = message.length;
      // A query (QR 0) with opcode QUERY and exactly one question; the other header bits do not change the answer.
      if (length < 17 || (message[2] & 0xf8) !== 0 || message[4] !== 0 || message[5] !== 1) return undefined;
      const end = questionEnd(message);
      if (end < 0) return undefined;
      const entry = entries.get(questionHash(message, end));
      if (entry === undefined || entry.rd !== (message[2] & 1)) return undefined;
      const question = entry.question;
      if (question.length !== end - 12) return undefined;
      for (let i = 0; i < question.length; i++) {
        if (question[i] !== message[12 + i]) return undefined;
      }
      const responses = entry.responses;
      const response = responses[entry.next].slice();
      entry.next = entry.next + 1 === responses.length ? 0 : entry.next + 1;
      response[0] = message[0];
      response[1] = message[1];
      return response;
    },
    decide(message: Uint8Array): Decision {
      const read = readQuestion(message);
      if (read === undefined || !isQuestion(read) || opcodeOf(read.flags) !== 0) {
        return decide(zone, message, maxSize);
      }
      const query = parseName(read.name);
      if (query.kind === "forward") return { kind: "forward" };
      if (read.type !== TYPE_A || read.qclass !== CLASS_IN) {
        const response = buildResponse(message, read, RCODE.NOERROR, [], maxSize);
        remember(message, read.end, [response.slice()]);
        return { kind: "reply", message: response };
      }
      const orderings = zone.orderings(query);
      if (orderings.length > MAX_ROTATIONS) return decide(zone, message, maxSize);
      const rcode = orderings[0].length > 0 ? RCODE.NOERROR : RCODE.NXDOMAIN;
      const responses = orderings.map((addresses) => buildResponse(message, read, rcode, addresses, maxSize));
      const first = responses[0].slice();
      remember(message, read.end, responses);
      return { kind: "reply", message: first };
    },
  };
}

function sizeOf(questionLength: number, responses: Uint8Array[]): number {
  return responses.reduce((sum, r) => sum + r.length, questionLength);
}

/** Where the question of `message` ends, or -1 when its labels run past the message. */
function questionEnd(message: Uint8Array): number {
  const length = message.length;
  let offset = 12;
  while (offset < length) {
    const label = message[offset];
    if (label === 0) return offset + 5 <= length ? offset + 5 : -1;
    // Compression and extended labels never make it into the cache, so they need no reading here.
    if (label > 63) return -1;
    offset += label + 1;
  }
  return -1;
}

/** FNV-1a over the question bytes (offset 12 to `end`). */
function questionHash(message: Uint8Array, end: number): number {
  let hash = 0x811c9dc5;
  for (let i = 12; i < end; i++) hash = Math.imul(hash ^ message[i], 0x01000193);
  return hash;
}
