// For the store's sync tests: a store in memory whose sync app listens on a free loopback port.
import { openStore, type Store } from "./store.ts";
import { createSyncApp } from "./sync_app.ts";

/** A store served over the sync protocol. */
export interface Served {
  /** The store. */
  store: Store;
  /** Base URL of its sync app. */
  url: string;
  /** Stops serving and closes the store. */
  close(): Promise<void>;
  /** {@linkcode Served.close} when an `await using` scope ends. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Opens an in-memory store of `siteId` in `clusterId` and serves its sync app on 127.0.0.1. */
export function serveStore(siteId: string, clusterId = "cluster-1", now?: () => number): Served {
  const store = openStore({ path: ":memory:", siteId, clusterId, now });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    createSyncApp(store).fetch,
  );
  const close = async (): Promise<void> => {
    await server.shutdown();
    store.close();
  };
  return { store, url: `http://127.0.0.1:${server.addr.port}`, close, [Symbol.asyncDispose]: close };
}
