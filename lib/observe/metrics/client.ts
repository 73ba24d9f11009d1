/**
 * A client of observe.sock's metric history, for a CLI on the same Machine.
 *
 * @module
 */

import { isErrorCode } from "../../util/mod.ts";
import { ObserveError } from "../errors.ts";
import type { MetricHistoryWireRequest, WireMetricHistory } from "./wire.ts";

/** Asks the Observe Store listening on `socketPath` for metric history; throws {@link ObserveError}. */
export async function fetchMetricHistory(
  socketPath: string,
  request: MetricHistoryWireRequest,
): Promise<WireMetricHistory> {
  const client = Deno.createHttpClient({ proxy: { transport: "unix", path: socketPath } });
  try {
    let response: Response;
    try {
      response = await fetch("http://observe/observe/v1/metric_history", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(request),
        client,
      });
    } catch (error) {
      throw new ObserveError(
        "unavailable",
        `Cannot reach the Observe Store at "${socketPath}": ${
          error instanceof Error ? error.message : String(error)
        }`,
        { socket: socketPath },
      );
    }
    const body = await response.json().catch(() => undefined);
    if (!response.ok) {
      const code = isErrorCode(body?.code) ? body.code : "internal";
      const message = typeof body?.message === "string"
        ? body.message
        : `Observe Store answered HTTP ${response.status}`;
      throw new ObserveError(code, message, typeof body?.details === "object" ? body.details : {});
    }
    return body as WireMetricHistory;
  } finally {
    client.close();
  }
}
