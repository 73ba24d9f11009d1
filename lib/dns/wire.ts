// The small part of the DNS wire format Internal DNS needs: one question in, A answers out. Hand-written rather
// than a general codec because it runs on every query.

/** DNS response codes used here. */
export const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4 } as const;

/** Record type A. */
export const TYPE_A = 1;
/** Class IN. */
export const CLASS_IN = 1;

/** The question of a query, with where it ends in the message. */
export interface Question {
  /** Message id. */
  id: number;
  /** Header flags of the query. */
  flags: number;
  /** Query name in presentation form, as sent (case kept), without the trailing dot. */
  name: string;
  /** Query type. */
  type: number;
  /** Query class. */
  qclass: number;
  /** Offset just past the question section. */
  end: number;
}

/** A message that could not be read as one question; `id` is set when the header was readable. */
export interface Unreadable {
  /** Message id, when at least the header was present. */
  id?: number;
  /** Header flags, when at least the header was present. */
  flags?: number;
}

/**
 * Reads the header and the single question of a query. Returns undefined for a response (QR set) or a message too
 * short to carry a header; returns {@link Unreadable} for anything else it cannot read.
 */
export function readQuestion(message: Uint8Array): Question | Unreadable | undefined {
  if (message.length < 12) return undefined;
  const id = (message[0] << 8) | message[1];
  const flags = (message[2] << 8) | message[3];
  if (flags & 0x8000) return undefined;
  const qdcount = (message[4] << 8) | message[5];
  if (qdcount !== 1) return { id, flags };
  let offset = 12;
  const labels: string[] = [];
  let total = 0;
  while (true) {
    if (offset >= message.length) return { id, flags };
    const length = message[offset];
    if (length === 0) {
      offset++;
      break;
    }
    // Compression pointers and extended label types have no business in a question.
    if (length > 63) return { id, flags };
    total += length + 1;
    if (total > 255 || offset + 1 + length > message.length) return { id, flags };
    labels.push(String.fromCharCode(...message.subarray(offset + 1, offset + 1 + length)));
    offset += 1 + length;
  }
  if (offset + 4 > message.length) return { id, flags };
  const type = (message[offset] << 8) | message[offset + 1];
  const qclass = (message[offset + 2] << 8) | message[offset + 3];
  return { id, flags, name: labels.join("."), type, qclass, end: offset + 4 };
}

/** True when `read` is a full question rather than an unreadable message. */
export function isQuestion(read: Question | Unreadable): read is Question {
  return "name" in read;
}

/** The opcode of a query's flags. */
export function opcodeOf(flags: number): number {
  return (flags >> 11) & 0xf;
}

/**
 * Builds an authoritative response echoing the question and carrying TTL-0 A records. When the answers do not
 * fit `maxSize`, as many as fit are kept and TC is set, so the client retries over TCP.
 */
export function buildResponse(
  query: Uint8Array,
  question: Question,
  rcode: number,
  addresses: string[],
  maxSize: number,
): Uint8Array {
  const questionBytes = query.subarray(12, question.end);
  const fit = Math.max(0, Math.floor((maxSize - 12 - questionBytes.length) / 16));
  const count = Math.min(addresses.length, fit);
  const out = new Uint8Array(12 + questionBytes.length + count * 16);
  writeHeader(out, question.id, question.flags, rcode, true, count < addresses.length);
  out[5] = 1;
  out[6] = count >> 8;
  out[7] = count & 0xff;
  out.set(questionBytes, 12);
  let offset = 12 + questionBytes.length;
  for (let i = 0; i < count; i++) {
    // Name: pointer to the question name at offset 12; type A, class IN, TTL 0, 4 bytes of address.
    out.set([0xc0, 0x0c, 0, TYPE_A, 0, CLASS_IN, 0, 0, 0, 0, 0, 4], offset);
    const parts = addresses[i].split(".");
    for (let b = 0; b < 4; b++) out[offset + 12 + b] = Number(parts[b]);
    offset += 16;
  }
  return out;
}

/** Builds an answerless, non-authoritative response with `rcode`, echoing the question when there is one. */
export function buildError(query: Uint8Array, read: Question | Unreadable, rcode: number): Uint8Array {
  const question = isQuestion(read) ? query.subarray(12, read.end) : new Uint8Array(0);
  const out = new Uint8Array(12 + question.length);
  writeHeader(out, read.id ?? 0, read.flags ?? 0, rcode, false, false);
  out[5] = question.length > 0 ? 1 : 0;
  out.set(question, 12);
  return out;
}

function writeHeader(
  out: Uint8Array,
  id: number,
  queryFlags: number,
  rcode: number,
  authoritative: boolean,
  truncated: boolean,
): void {
  // QR, the query's opcode and RD, AA (for .internal answers), RA (other names are forwarded), TC, rcode.
  const flags = 0x8000 | (queryFlags & 0x7900) | (authoritative ? 0x0400 : 0) | 0x0080 |
    (truncated ? 0x0200 : 0) | (rcode & 0xf);
  out[0] = id >> 8;
  out[1] = id & 0xff;
  out[2] = flags >> 8;
  out[3] = flags & 0xff;
}
