/**
 * Docker events about this Machine's own containers, filtered by Docker (type, owner labels, actions).
 *
 * @module
 */

import type { IncomingMessage } from "node:http";
import { linesUntilAborted } from "../../util/mod.ts";
import { type Client, request } from "./client.ts";
import type { DockerEventMessage } from "./docker_types.ts";
import { DockerError } from "./errors.ts";
import { LABELS } from "./labels.ts";
import { type ContainerEvent, EVENT_ACTIONS, observeEvent } from "./observe.ts";

/** Options of `containerEvents`. */
export interface EventOptions {
  /** Replay events from this time on (milliseconds since the epoch), to close the gap after a rescan. */
  sinceMs?: number;
}

/**
 * Follows events of owned containers until `signal` aborts (then it ends quietly). If Docker ends the stream,
 * the iterator throws `unavailable`: events were lost, and the caller rescans.
 */
export async function* containerEvents(
  client: Client,
  signal: AbortSignal,
  options: EventOptions = {},
): AsyncGenerator<ContainerEvent> {
  const query: Record<string, unknown> = {
    filters: {
      type: ["container"],
      label: [`${LABELS.managed}=1`, `${LABELS.machine}=${client.machineId}`],
      event: [...EVENT_ACTIONS],
    },
  };
  if (options.sinceMs !== undefined) query.since = (options.sinceMs / 1000).toFixed(3);
  if (signal.aborted) return;
  let response: IncomingMessage;
  try {
    response = await request(client, { operation: "follow container events", cls: "stream_start", signal }, {
      method: "GET",
      path: "/events",
      query,
      stream: true,
    }) as IncomingMessage;
  } catch (error) {
    if (signal.aborted) return;
    throw error;
  }
  try {
    // Ended by the abort itself, whether or not destroying the response settles its pending read: a stopping
    // daemon once waited forever here, its event stream to Docker still open and nothing else pending.
    for await (const raw of linesUntilAborted(response, signal)) {
      const line = raw.trim();
      if (line === "") continue;
      let message: DockerEventMessage;
      try {
        message = JSON.parse(line);
      } catch {
        continue;
      }
      const event = observeEvent(message);
      if (event !== undefined) yield event;
    }
  } catch (error) {
    if (signal.aborted) return;
    throw new DockerError("unavailable", "Cannot follow container events: Docker broke the event stream", {
      cause: error,
    });
  } finally {
    response.destroy();
    response.socket?.destroy();
  }
  if (signal.aborted) return;
  throw new DockerError("unavailable", "Cannot follow container events: Docker ended the event stream");
}
