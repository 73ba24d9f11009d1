import { keyFiles, StoreNode } from "../../tests/support/store_cluster.ts";

// Separate store processes on loopback; after a warm-up round, 200 writes spread over them; time until every
// replica holds all 200, and the CPU time all replicas spent meanwhile.
// Push fan-out 3 with one relay, anti-entropy every ~500 ms. Prints bytes sent per change. Each replica count runs
// unsigned (the baseline) and signed (every change signed at its origin and verified by every receiver).

const WRITES = 200;

async function converge(
  replicas: number,
  signed: boolean,
): Promise<{ ms: number; bytes: number; cpuMs: number }> {
  const dir = await Deno.makeTempDir({ prefix: "convergence_bench_" });
  const sites = Array.from({ length: replicas }, (_, i) => `site-${i}`);
  const files = signed ? await keyFiles(dir, sites) : [];
  const nodes = sites.map((site, i) => new StoreNode(dir, site, "bench", files[i]));
  try {
    for (let i = 0; i < nodes.length; i += 6) {
      await Promise.all(nodes.slice(i, i + 6).map((n) => n.start(dir)));
    }
    const urls = nodes.map((n) => n.url);
    await Promise.all(
      nodes.map((n) => n.call("/test/start", { peers: urls.filter((u) => u !== n.url), antiEntropyMs: 500 })),
    );
    // Warm-up: one write per replica, spread to all, so each process has verified, signed and compiled its
    // paths once; what is measured is steady-state dissemination, not each process's first use of them.
    const warm = nodes.map((n) => n.call(`/test/wait?count=${replicas}`));
    await Promise.all(nodes.map((n) => n.call("/test/write", { count: 1, prefix: "warm", pointer: false })));
    await Promise.all(warm);
    const sent = async (): Promise<number> =>
      (await Promise.all(nodes.map((n) => n.call<{ bytesSent: number }>("/test/stats"))))
        .reduce((sum, s) => sum + s.bytesSent, 0);
    const bytesBefore = await sent();
    const waits = nodes.map((n) => n.call<{ reachedAt: number }>(`/test/wait?count=${replicas + WRITES}`));
    const cpuBefore = nodes.reduce((sum, n) => sum + n.cpuMs(), 0);
    const started = Date.now();
    await Promise.all(nodes.map((n, i) => {
      const count = Math.floor(WRITES / replicas) + (i < WRITES % replicas ? 1 : 0);
      return n.call("/test/write", { count, prefix: "w", pointer: false });
    }));
    const reached = await Promise.all(waits);
    const ms = Math.max(...reached.map((r) => r.reachedAt)) - started;
    const cpuMs = nodes.reduce((sum, n) => sum + n.cpuMs(), 0) - cpuBefore;
    const bytes = await sent() - bytesBefore;
    return { ms, bytes, cpuMs };
  } finally {
    await Promise.all(nodes.map((n) => n.kill()));
    await Deno.remove(dir, { recursive: true });
  }
}

// CONVERGENCE_REPLICAS=30 runs only that size.
const SIZES = (Deno.env.get("CONVERGENCE_REPLICAS") ?? "3,30").split(",").map(Number);

for (const replicas of SIZES) {
  for (const signed of [false, true]) {
    Deno.bench({
      name: `${replicas} replica processes, ${WRITES} writes until all hold all, ${
        signed ? "signed" : "unsigned"
      }`,
      group: `convergence, ${replicas} replicas`,
      baseline: !signed,
      n: 1,
      warmup: 0,
      async fn(b) {
        b.start();
        const { ms, bytes, cpuMs } = await converge(replicas, signed);
        b.end();
        console.log(
          `convergence: ${replicas} replicas, ${WRITES} writes, ${
            signed ? "signed" : "unsigned"
          }: ${ms} ms, ${cpuMs} ms CPU over all replicas; ` +
            `${bytes} bytes sent, ${Math.round(bytes / WRITES)} bytes per change, ` +
            `${Math.round(bytes / (WRITES * (replicas - 1)))} bytes per change per receiving replica`,
        );
      },
    });
  }
}
