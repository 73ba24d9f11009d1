import assert from "node:assert/strict";
import { DockerError } from "../lib/deploy/mod.ts";
import { dockerTest, IMAGE } from "./support/docker.ts";

dockerTest("an image saved and loaded comes back", async (s) => {
  const ref = `ployz-test/roundtrip:${s.id}`;
  const [repo, tag] = ref.split(":");
  await s.raw.getImage(IMAGE).tag({ repo, tag });
  try {
    assert.equal(await s.engine.imageExists(ref), true);
    const archive = await s.engine.saveImage(ref);
    const bytes = new Uint8Array(await new Response(archive).arrayBuffer());
    assert.ok(bytes.length > 100_000, `archive of ${bytes.length} bytes`);
    await s.raw.getImage(ref).remove();
    assert.equal(await s.engine.imageExists(ref), false);

    const loaded = await s.engine.loadImage(new Blob([bytes]).stream());
    assert.deepEqual(loaded.images, [ref]);
    assert.equal(await s.engine.imageExists(ref), true);
  } finally {
    await s.raw.getImage(ref).remove().catch(() => {});
  }
});

dockerTest("saving an absent image and loading garbage fail clearly", async (s) => {
  await assert.rejects(
    s.engine.saveImage(`ployz-test/absent:${s.id}`),
    (e) => e instanceof DockerError && e.code === "not_found",
  );
  await assert.rejects(
    s.engine.loadImage(new Blob([new TextEncoder().encode("not a tar archive")]).stream()),
    (e) => e instanceof DockerError,
  );
});
