import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { generateSigningSecret } from "./signing.ts";
import { openStore, type Store } from "./store.ts";

// Local writes with CRDT bookkeeping (change log, HLC, version vector, owner check) against plain inserts of
// the same rows into a table of the same shape, both one transaction per row on a WAL file. A second group puts
// the same rows in an unsigned store (the baseline) and in a signed one: alone, and with each write made ready to
// leave at once (signed, signature kept, version high-water mark synced), the worst case of a push per write.

const dir = Deno.makeTempDirSync({ prefix: "write_bench_" });
globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
const ROWS = 500;
let run = 0;

function body(i: number): Record<string, unknown> {
  return {
    id: `c-${run}-${i}`,
    machine_id: "m1",
    project: "shop",
    service: "web",
    name: `web-${i}`,
    image: "registry.example/shop/web:1.4.2",
    state: "running",
    addresses: ["10.210.1.7"],
  };
}

Deno.bench({
  name: "raw node:sqlite insert, 500 rows",
  group: "local write",
  baseline: true,
  fn(b) {
    const db = new DatabaseSync(join(dir, `raw-${++run}.db`), { timeout: 5000 });
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    db.exec("CREATE TABLE containers (key TEXT PRIMARY KEY NOT NULL, body TEXT)");
    const insert = db.prepare("INSERT INTO containers (key, body) VALUES (?, ?)");
    b.start();
    for (let i = 0; i < ROWS; i++) {
      const row = body(i);
      insert.run(String(row.id), JSON.stringify(row));
    }
    b.end();
    db.close();
  },
});

// The same rows into a plain table keyed and laid out like the store's row table (seq as rowid, a unique key,
// the filter fields as columns), holding the body itself, without the change log, clock or ownership.
Deno.bench({
  name: "raw node:sqlite insert into a table with the store's keys and filter columns, 500 rows",
  group: "local write",
  fn(b) {
    const db = new DatabaseSync(join(dir, `indexed-${++run}.db`), { timeout: 5000 });
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    db.exec(
      `CREATE TABLE containers (seq INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, body TEXT,
       f_machine_id TEXT, f_project TEXT, f_service TEXT)`,
    );
    const insert = db.prepare(
      "INSERT INTO containers (seq, key, body, f_machine_id, f_project, f_service) VALUES (?, ?, ?, ?, ?, ?)",
    );
    b.start();
    for (let i = 0; i < ROWS; i++) {
      const row = body(i);
      const text = JSON.stringify(row);
      insert.run(
        i + 1,
        String(row.id),
        text,
        String(row.machine_id),
        String(row.project),
        String(row.service),
      );
    }
    b.end();
    db.close();
  },
});

/** A store in a fresh file named after `label`, signing its changes when `signed`. */
function benchStore(label: string, signed: boolean): Store {
  return openStore({
    path: join(dir, `${label}-${++run}.db`),
    siteId: "m1",
    clusterId: "bench",
    ...(signed ? { signingSecret: generateSigningSecret() } : {}),
  });
}

/** Times ROWS container puts into a fresh store, each passed to `after` (its outbound, say) before the next. */
async function timePuts(
  b: Deno.BenchContext,
  store: Store,
  after?: (change: ReturnType<Store["containers"]["put"]>) => Promise<unknown>,
): Promise<void> {
  using open = store;
  b.start();
  for (let i = 0; i < ROWS; i++) {
    const change = open.containers.put(body(i) as never);
    if (after !== undefined) await after(change);
  }
  b.end();
}

Deno.bench({
  name: "store put with CRDT bookkeeping, 500 rows",
  group: "local write",
  async fn(b) {
    await timePuts(b, benchStore("store", false));
  },
});

Deno.bench({
  name: "unsigned store put, 500 rows",
  group: "signed local write",
  baseline: true,
  async fn(b) {
    await timePuts(b, benchStore("unsigned", false));
  },
});

Deno.bench({
  name: "signed store put, 500 rows",
  group: "signed local write",
  async fn(b) {
    await timePuts(b, benchStore("signed", true));
  },
});

Deno.bench({
  name: "signed store put, each write signed and its version mark synced before the next, 500 rows",
  group: "signed local write",
  async fn(b) {
    const store = benchStore("outbound", true);
    await timePuts(b, store, (change) => store.outbound([change]));
  },
});
