import assert from "node:assert/strict";
import { DockerError, LABELS, MASQUERADE_OPTION } from "../lib/deploy/mod.ts";
import { dockerTest, type Scope, testSubnet } from "./support/docker.ts";

/** A bridge network `ployz-test-<id>-<suffix>` on a fresh test subnet, made by Docker itself with `labels`. */
async function rawNetwork(
  s: Scope,
  suffix: string,
  labels: Record<string, string> = {},
): Promise<{ name: string; subnet: string; gateway: string }> {
  const network = { name: `ployz-test-${s.id}-${suffix}`, ...testSubnet() };
  await s.raw.createNetwork({
    Name: network.name,
    Driver: "bridge",
    IPAM: { Config: [{ Subnet: network.subnet, Gateway: network.gateway }] },
    Labels: { ...labels, "ployz.test": s.id },
  });
  return network;
}

dockerTest("ensureNetwork creates, is idempotent, and refuses a subnet mismatch", async (s) => {
  const name = `ployz-test-${s.id}`;
  const { subnet, gateway } = testSubnet();
  const made = await s.engine.ensureNetwork({ name, subnet, gateway });
  assert.equal(made.created, true);
  const raw = await s.raw.getNetwork(made.id).inspect();
  assert.equal(raw.Driver, "bridge");
  assert.equal(raw.Labels[LABELS.managed], "1");
  assert.equal(raw.Labels[LABELS.machine], s.machineId);
  assert.deepEqual(raw.IPAM.Config, [{ Subnet: subnet, Gateway: gateway }]);
  // Docker must not masquerade it: containers keep their own addresses across the mesh.
  assert.equal(raw.Options[MASQUERADE_OPTION], "false");
  assert.equal(made.masqueradeProblem, undefined);

  const again = await s.engine.ensureNetwork({ name, subnet, gateway });
  assert.equal(again.created, false);
  assert.equal(again.id, made.id);

  const other = subnet.replace(/\.0\/24$/, ".0/25");
  await assert.rejects(s.engine.ensureNetwork({ name, subnet: other, gateway }), (e) => {
    assert.ok(e instanceof DockerError);
    assert.equal(e.code, "conflict");
    assert.equal(
      e.message,
      `Network "${name}" has subnet "${subnet}", expected "${other}": remove it or choose its subnet`,
    );
    return true;
  });
  const count = (await s.raw.listNetworks({ filters: { label: [`ployz.test=${s.id}`] } })).length;
  assert.equal(count, 1);
});

dockerTest("a network named after another's id prefix is found by its exact name", async (s) => {
  const made = await s.engine.ensureNetwork({ name: `ployz-test-${s.id}`, ...testSubnet() });
  // Docker's inspect by this name answers the first network until one has the exact name, which then wins.
  const prefix = made.id.slice(0, 12);
  const second = testSubnet();
  const byPrefix = await s.engine.ensureNetwork({ name: prefix, ...second });
  assert.equal(byPrefix.created, true);
  assert.notEqual(byPrefix.id, made.id);
  const exact = await s.engine.ensureNetwork({ name: prefix, ...second });
  assert.equal(exact.created, false);
  assert.equal(exact.id, byPrefix.id);
});

dockerTest("a network Ployz does not own is refused, not adopted", async (s) => {
  const { name, subnet, gateway } = await rawNetwork(s, "foreign");
  await assert.rejects(
    s.engine.ensureNetwork({ name, subnet, gateway }),
    (e) => e instanceof DockerError && e.code === "conflict" && e.details.network === name,
  );
});

dockerTest(
  "containers join the Machine network with aliases, DNS settings and an observed address",
  async (s) => {
    const name = `ployz-test-${s.id}`;
    const { subnet, gateway } = testSubnet();
    await s.engine.ensureNetwork({ name, subnet, gateway });
    const spec = s.spec("net", {
      network: { name, aliases: ["web.proj.internal"] },
      dns: { servers: [gateway], search: ["proj.internal"] },
    });
    const made = await s.engine.createContainer(spec);
    await s.engine.startContainer(made.id);
    const seen = await s.engine.inspectContainer(made.id);
    assert.equal(seen?.address?.network, name);
    assert.ok(seen?.address?.ipv4?.startsWith(subnet.slice(0, subnet.lastIndexOf("."))));
    assert.ok(seen?.address?.aliases.includes("web.proj.internal"));
    const raw = await s.raw.getContainer(made.id).inspect();
    assert.deepEqual(raw.HostConfig.Dns, [gateway]);
    assert.deepEqual(raw.HostConfig.DnsSearch, ["proj.internal"]);

    // Connect: a second owned container joins later with its own alias.
    const late = await s.engine.createContainer(s.spec("late"));
    await s.engine.connectNetwork(late.id, { network: name, aliases: ["late.proj.internal"] });
    const lateSeen = await s.engine.inspectContainer(late.id);
    assert.ok(lateSeen?.address?.aliases.includes("late.proj.internal"));
  },
);

dockerTest("a Machine network created with Docker's masquerade on is reported with the fix", async (s) => {
  // As ployzd made it before masquerade was turned off: owned, no bridge options.
  const { name, subnet, gateway } = await rawNetwork(s, "old", {
    [LABELS.managed]: "1",
    [LABELS.machine]: s.machineId,
  });
  const found = await s.engine.ensureNetwork({ name, subnet, gateway });
  assert.equal(found.created, false);
  assert.equal(
    found.masqueradeProblem,
    `Network "${name}" was created with Docker's IP masquerade on, so its containers' connections to other ` +
      `Machines can leave with this host's address and be dropped; it cannot be changed in place: run ` +
      `"docker network rm ${name}" and restart ployzd (it recreates the network with ` +
      `com.docker.network.bridge.enable_ip_masquerade=false)`,
  );
  // Off the mesh, Docker's masquerade is what the Machine wants: nothing to report.
  const offMesh = await s.engine.ensureNetwork({ name, subnet, gateway, dockerMasquerade: true });
  assert.equal(offMesh.masqueradeProblem, undefined);
  const c = await s.engine.createContainer(s.spec("old", { network: { name } }));
  await s.engine.startContainer(c.id); // Docker lists only running containers' endpoints
  const named = await s.engine.ensureNetwork({ name, subnet, gateway });
  assert.match(
    named.masqueradeProblem ?? "",
    new RegExp(
      `remove the 1 container\\(s\\) attached to it \\(${c.name}\\), run "docker network rm ${name}"`,
    ),
  );
  assert.match(named.masqueradeProblem ?? "", /then deploy again to put Ployz's containers back$/);
});
