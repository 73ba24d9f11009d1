/**
 * When a Machine may be retired as gone (`machine rm --gone`), judged from what the asking Machine can see now
 * rather than from its membership label. A WireGuard handshake keeps the label `up` for up to 185 s after a peer
 * dies (a session is valid that long), which says nothing about whether the peer still sends. Two facts do:
 *
 * - **Quiet**: this Machine has received nothing from the peer (no packet on the interface, keepalives included,
 *   and no store traffic) for the quiet window. A live peer sends a keepalive at least every 25 s and syncs more
 *   often, so the window is the membership's store-up window (30 s by default), longer than one keepalive period.
 * - **No answer now**: a bounded probe of the peer's Machine RPC over the mesh gets no answer at all. Any answer,
 *   even a refusal, proves its daemon is alive.
 *
 * Both must hold. A Machine never heard from at all is judged by the probe alone. Everything here is pure;
 * retire_machine.ts gathers the evidence and asks.
 *
 * @module
 */

/** What the asking Machine saw of the peer; times in ms since the epoch. */
export interface GoneEvidence {
  /** Now, on this Machine's clock. */
  now: number;
  /** The last time anything from the peer arrived (a packet or store traffic), if ever. */
  lastHeard?: number;
  /** How long the peer must have been quiet. */
  quietMs: number;
}

/** What a bounded probe of the peer's Machine RPC over the mesh found. */
export type ProbeResult =
  | { answered: true; ms: number }
  | { answered: false; ms: number; reason: string };

/** Whether to retire, and the sentence saying what was observed. */
export type GoneVerdict =
  | { gone: true; observed: string }
  | { gone: false; observed: string; acceptAfter?: string };

function ago(ms: number): string {
  return ms < 1_000 ? `${Math.max(0, Math.round(ms))} ms` : `${Math.round(ms / 1_000)} s`;
}

/** The quiet part of the judgement: `undefined` when the peer has been quiet long enough (or never heard). */
export function notQuiet(
  observer: string,
  evidence: GoneEvidence,
): { observed: string; acceptAfter: string } | undefined {
  if (evidence.lastHeard === undefined) return undefined;
  const quietFor = evidence.now - evidence.lastHeard;
  if (quietFor >= evidence.quietMs) return undefined;
  const acceptAfter = new Date(evidence.lastHeard + evidence.quietMs).toISOString();
  return {
    observed: `"${observer}" last heard from it ${ago(quietFor)} ago (at ${
      new Date(evidence.lastHeard).toISOString()
    }) and it did not answer a probe over the mesh; it counts as gone once "${observer}" has heard nothing from it for ${
      ago(evidence.quietMs)
    } and it still does not answer: try again after ${acceptAfter} (in ${
      ago(evidence.lastHeard + evidence.quietMs - evidence.now)
    })`,
    acceptAfter,
  };
}

/**
 * The whole judgement. A probe that was answered decides first (the Machine is alive: no waiting helps); a silent
 * one still needs the quiet window, and the refusal then says when it will have passed.
 */
export function goneVerdict(observer: string, evidence: GoneEvidence, probe: ProbeResult): GoneVerdict {
  if (probe.answered) {
    return {
      gone: false,
      observed: `it answered a probe from "${observer}" over the mesh just now (in ${ago(probe.ms)})`,
    };
  }
  const quiet = notQuiet(observer, evidence);
  if (quiet !== undefined) {
    return { gone: false, observed: `${quiet.observed} (${probe.reason})`, acceptAfter: quiet.acceptAfter };
  }
  const heard = evidence.lastHeard === undefined
    ? `"${observer}" never heard from it`
    : `"${observer}" last heard from it ${ago(evidence.now - evidence.lastHeard)} ago (at ${
      new Date(evidence.lastHeard).toISOString()
    })`;
  return { gone: true, observed: `${heard}, and it did not answer a probe over the mesh (${probe.reason})` };
}
