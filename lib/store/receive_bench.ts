import { generateSigningSecret, signingPublicKey } from "./signing.ts";
import { openStore, type Store } from "./store.ts";
import type { Change } from "./change.ts";
import type { Container } from "./schemas.ts";

// One replica receiving a push of 200 changes written by 10 other Machines, as a push reply path does it (shape,
// table rules, duplicates, merge, one transaction): unsigned (the baseline) against signed, where each change is
// verified against its author's admitted key before the merge. Each iteration receives into a fresh store.

const WRITES = 200;
const AUTHORS = 10;

function container(site: string, i: number): Container {
  return {
    id: `${site}-c${i}`,
    machine_id: site,
    project: "bench",
    service: `svc${i % 7}`,
    name: `w-${i}`,
    image: "registry.example/app:1.0",
    state: "running",
  };
}

async function batch(
  signed: boolean,
): Promise<{ changes: Change[]; members: { id: string; signingKey: string }[] }> {
  const sites = Array.from({ length: AUTHORS }, (_, i) => `site-${i}`);
  const secrets = sites.map(() => generateSigningSecret());
  const members = sites.map((id, i) => ({ id, signingKey: signingPublicKey(secrets[i]) }));
  const changes: Change[] = [];
  for (const [n, site] of sites.entries()) {
    const store = openStore({
      path: ":memory:",
      siteId: site,
      clusterId: "bench",
      signingSecret: signed ? secrets[n] : undefined,
    });
    const written = Array.from(
      { length: WRITES / AUTHORS },
      (_, i) => store.containers.put(container(site, i)),
    );
    changes.push(...await store.outbound(written));
    store.close();
  }
  return { changes, members };
}

const inputs = { unsigned: await batch(false), signed: await batch(true) };
let run = 0;

function receiver(signed: boolean): Store {
  const store = openStore({
    path: ":memory:",
    siteId: `receiver-${++run}`,
    clusterId: "bench",
    signingSecret: signed ? generateSigningSecret() : undefined,
  });
  if (signed) store.addAnchors(inputs.signed.members);
  return store;
}

for (const signed of [false, true]) {
  Deno.bench({
    name: `receive ${WRITES} changes from ${AUTHORS} Machines, ${signed ? "signed" : "unsigned"}`,
    group: "receive",
    baseline: !signed,
    async fn(b) {
      const store = receiver(signed);
      const { changes } = signed ? inputs.signed : inputs.unsigned;
      b.start();
      const result = await store.receive(structuredClone(changes));
      b.end();
      if (result.applied !== WRITES) {
        throw new Error(`applied ${result.applied}: ${JSON.stringify(result.rejected[0])}`);
      }
      store.close();
    },
  });
}
