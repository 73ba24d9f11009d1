/**
 * Endpoint selection for one peer: cycle through the peer's Advertised Endpoints until a
 * handshake holds. Pure: the caller passes the time and the handshake evidence and applies the endpoint it gets
 * back (see `EndpointDriver`).
 *
 * - Unselected: no candidates yet.
 * - Testing (endpoint, since): set on the interface at `since`, no handshake seen after that yet. If none arrives
 *   within the connection timeout (15 s), the peer counts as down and the next candidate is tried.
 * - Established (endpoint): a handshake arrived after the switch; the peer stays up until no handshake for the down
 *   interval (275 s), then the next candidate is tried.
 * - An endpoint the interface reports that differs from the selection (WireGuard roamed after an authenticated
 *   packet) is adopted as established.
 *
 * @module
 */

/** Timing of endpoint selection; milliseconds. */
export interface EndpointTiming {
  /** How long a newly selected endpoint has to produce a handshake; default 15 000. */
  connectionTimeoutMs: number;
  /** No handshake for this long means the peer is down; default 275 000. */
  peerDownMs: number;
}

/** The timing of endpoint selection. */
export const DEFAULT_ENDPOINT_TIMING: Readonly<EndpointTiming> = Object.freeze({
  connectionTimeoutMs: 15_000,
  peerDownMs: 275_000,
});

/** Where one peer's selection stands. */
export type EndpointState =
  | { kind: "unselected" }
  | { kind: "testing"; endpoint: string; since: number }
  | { kind: "established"; endpoint: string };

/** One peer's candidates and selection state (immutable; functions return a new one). */
export interface EndpointSelection {
  /** The peer's Advertised Endpoints, in the order it advertised them (`host:port`). */
  candidates: readonly string[];
  /** The state. */
  state: EndpointState;
}

/** How one peer looks to endpoint selection. */
export type EndpointStatus = "unknown" | "up" | "down";

/** Starts selection: established on a remembered endpoint, else testing the first candidate, else unselected. */
export function newEndpointSelection(
  candidates: readonly string[],
  remembered: string | undefined,
  now: number,
): EndpointSelection {
  return { candidates: [...candidates], state: initialState(candidates, remembered, now) };
}

function initialState(
  candidates: readonly string[],
  remembered: string | undefined,
  now: number,
): EndpointState {
  if (remembered !== undefined) return { kind: "established", endpoint: remembered };
  if (candidates.length === 0) return { kind: "unselected" };
  return { kind: "testing", endpoint: candidates[0], since: now };
}

/** The endpoint currently set (testing or established), if any. */
export function selectedEndpoint(selection: EndpointSelection): string | undefined {
  return selection.state.kind === "unselected" ? undefined : selection.state.endpoint;
}

/**
 * Replaces the candidates (the peer re-advertised). An unselected peer starts testing the first new candidate
 * (returned so the caller sets it); a peer with a selection keeps it.
 */
export function replaceCandidates(
  selection: EndpointSelection,
  candidates: readonly string[],
  now: number,
): { selection: EndpointSelection; changed?: string } {
  if (selection.state.kind !== "unselected") {
    return { selection: { ...selection, candidates: [...candidates] } };
  }
  const next = newEndpointSelection(candidates, undefined, now);
  return { selection: next, changed: selectedEndpoint(next) };
}

/** Judges the peer for endpoint selection from the latest handshake (ms since the epoch). */
export function endpointStatus(
  selection: EndpointSelection,
  now: number,
  latestHandshake: number | undefined,
  timing: EndpointTiming = DEFAULT_ENDPOINT_TIMING,
): EndpointStatus {
  const sinceHandshake = latestHandshake === undefined ? Infinity : now - latestHandshake;
  const state = selection.state;
  if (state.kind === "unselected") return "unknown";
  if (state.kind === "established") return sinceHandshake < timing.peerDownMs ? "up" : "down";
  const sinceChange = Math.max(0, now - state.since);
  const handshookAfterChange = handshookSince(latestHandshake, state.since);
  if (sinceChange > timing.peerDownMs) return sinceHandshake < timing.peerDownMs ? "up" : "down";
  if (sinceChange < timing.connectionTimeoutMs) return handshookAfterChange ? "up" : "unknown";
  return handshookAfterChange ? "up" : "down";
}

/** What one poll observed. */
export interface EndpointObservation {
  /** Now (ms since the epoch). */
  now: number;
  /** The latest handshake with the peer (ms since the epoch), if any. */
  latestHandshake?: number;
  /** The endpoint the interface currently reports for the peer, if any. */
  deviceEndpoint?: string;
}

/**
 * Advances selection by one observation. Returns the new selection and, when the caller must set a different
 * endpoint on the interface, `changed`.
 */
export function pollEndpoint(
  selection: EndpointSelection,
  observation: EndpointObservation,
  timing: EndpointTiming = DEFAULT_ENDPOINT_TIMING,
): { selection: EndpointSelection; changed?: string } {
  const { now, latestHandshake, deviceEndpoint } = observation;
  const current = selectedEndpoint(selection);
  if (deviceEndpoint !== undefined && deviceEndpoint !== current) {
    // WireGuard moved to where authenticated packets come from; that is evidence, so keep it.
    return { selection: { ...selection, state: { kind: "established", endpoint: deviceEndpoint } } };
  }
  let state = selection.state;
  if (state.kind === "testing" && handshookSince(latestHandshake, state.since)) {
    state = { kind: "established", endpoint: state.endpoint };
  }
  const next = { ...selection, state };
  if (endpointStatus(next, now, latestHandshake, timing) !== "down") return { selection: next };
  const endpoint = nextCandidate(next);
  if (endpoint === undefined) return { selection: next };
  return { selection: { ...next, state: { kind: "testing", endpoint, since: now } }, changed: endpoint };
}

/**
 * Whether a handshake counts as arriving after `since`. WireGuard reports handshakes in whole seconds, so one in the
 * same second as the switch may read as earlier than it; judging it as before would drop a live endpoint.
 */
function handshookSince(latestHandshake: number | undefined, since: number): boolean {
  return latestHandshake !== undefined && latestHandshake >= Math.floor(since / 1000) * 1000;
}

function nextCandidate(selection: EndpointSelection): string | undefined {
  const current = selectedEndpoint(selection);
  if (current === undefined) return undefined;
  const { candidates } = selection;
  const index = candidates.indexOf(current);
  const next = index >= 0 && candidates.length > 1 ? (index + 1) % candidates.length : 0;
  return candidates[next];
}
