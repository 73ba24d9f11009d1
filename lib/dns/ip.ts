// Address checks for the DNS process. Hand-written rather than node:net's isIPv4/isIPv6 because loading node:net
// costs the process about 5 MB of resident memory, and `ployzd dns` runs on every Machine all the time.

const OCTET = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
const IPV4 = new RegExp(`^${OCTET}(?:\\.${OCTET}){3}$`);
const GROUP = /^[0-9a-fA-F]{1,4}$/;

/** True for a dotted-quad IPv4 address (no leading zeros, as node:net's `isIPv4`). */
export function isIPv4(text: string): boolean {
  return IPV4.test(text);
}

/** True for an IPv6 address in any RFC 4291 text form (`::` and a trailing dotted quad allowed; no zone). */
export function isIPv6(text: string): boolean {
  if (text.length > 45 || !text.includes(":")) return false;
  const lastColon = text.lastIndexOf(":");
  const tail = text.slice(lastColon + 1);
  // A trailing dotted quad stands for the last two groups.
  let body = text;
  if (tail.includes(".")) {
    if (!isIPv4(tail)) return false;
    body = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const halves = body.split("::");
  if (halves.length > 2) return false;
  const head = groupsOf(halves[0]);
  if (head === undefined) return false;
  if (halves.length === 1) return head === 8;
  const rest = groupsOf(halves[1]);
  return rest !== undefined && head + rest < 8;
}

// How many valid groups a `:`-separated run holds, or undefined when one is not a 1–4 digit hex group.
function groupsOf(run: string): number | undefined {
  if (run === "") return 0;
  const groups = run.split(":");
  return groups.every((g) => GROUP.test(g)) ? groups.length : undefined;
}
