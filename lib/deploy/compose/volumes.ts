/**
 * The top-level `volumes:` of a Project and the Provisioned Volumes of `x-volumes:`, read into
 * {@linkcode NormalizedVolume}s.
 *
 * @module
 */

import { checkMapping, VOLUME_KEYS, X_VOLUME_KEYS } from "./keys.ts";
import { dockerNameProblem, volumeNameProblem } from "./names.ts";
import { type Entry, isMapping, type Reader, sorted } from "./reader.ts";
import { readBytes, readLabels } from "./service_fields.ts";
import type { NormalizedVolume } from "./types.ts";

/** Top-level `volumes:` (named `<project>_<key>` unless external) and `x-volumes:` Provisioned Volumes. */
export function readVolumes(
  reader: Reader,
  entry: Entry | undefined,
  extension: Entry | undefined,
  project: string,
): Record<string, NormalizedVolume> {
  const out: Record<string, NormalizedVolume> = {};
  for (const volume of entry === undefined ? [] : reader.entries(entry.value, entry.path) ?? []) {
    const problem = volumeNameProblem(volume.key);
    if (problem !== undefined) {
      reader.fail(volume.keyNode, volume.path, problem);
      continue;
    }
    const keys = checkMapping(reader, volume.value, volume.path, VOLUME_KEYS, {
      where: "a volume",
    });
    const externalEntry = keys.get("external");
    let external = false;
    let externalName: string | undefined;
    if (externalEntry !== undefined && externalEntry.value !== null) {
      if (isMapping(externalEntry.value)) {
        external = true;
        const legacy = (reader.entries(externalEntry.value, externalEntry.path) ?? []).find((item) =>
          item.key === "name"
        );
        if (legacy !== undefined) externalName = reader.text(legacy.value, legacy.path);
      } else {
        external = reader.boolean(externalEntry.value, externalEntry.path) ?? false;
      }
    }
    const nameEntry = keys.get("name");
    const declaredName = nameEntry === undefined || nameEntry.value === null
      ? undefined
      : reader.text(nameEntry.value, nameEntry.path);
    if (external) {
      externalName = declaredName ?? externalName ?? volume.key;
      const nameProblem = dockerNameProblem("external volume", externalName);
      if (nameProblem !== undefined) {
        reader.fail(nameEntry?.value ?? volume.keyNode, nameEntry?.path ?? volume.path, nameProblem);
      }
    } else if (declaredName !== undefined && declaredName !== "") {
      reader.warn(
        nameEntry?.keyNode,
        nameEntry?.path ?? volume.path,
        `key "name" is ignored for a Project volume: Ployz names it "${project}_${volume.key}"`,
      );
    }
    const driverEntry = keys.get("driver");
    const driver = driverEntry === undefined || driverEntry.value === null
      ? null
      : reader.text(driverEntry.value, driverEntry.path) ?? null;
    const optionsEntry = keys.get("driver_opts");
    const labelsEntry = keys.get("labels");
    const driverOptions: Record<string, string> = {};
    for (
      const [key, item] of reader.keyValues(optionsEntry?.value ?? null, optionsEntry?.path ?? volume.path) ??
        []
    ) {
      driverOptions[key] = item.value ?? "";
    }
    const labels = readLabels(reader, labelsEntry?.value ?? null, labelsEntry?.path ?? volume.path);
    if (external && (driver !== null || Object.keys(driverOptions).length > 0)) {
      reader.fail(volume.keyNode, volume.path, `an external volume cannot set "driver" or "driver_opts"`);
    }
    out[volume.key] = {
      name: volume.key,
      external,
      dockerName: external ? externalName ?? volume.key : `${project}_${volume.key}`,
      driver,
      driverOptions: sorted(driverOptions),
      labels,
      sizeBytes: null,
    };
  }
  for (
    const provisioned of extension === undefined ? [] : reader.entries(extension.value, extension.path) ?? []
  ) {
    const problem = volumeNameProblem(provisioned.key);
    if (problem !== undefined) {
      reader.fail(provisioned.keyNode, provisioned.path, problem);
      continue;
    }
    let sizeNode = provisioned.value;
    let sizePath = provisioned.path;
    if (isMapping(provisioned.value)) {
      const keys = checkMapping(reader, provisioned.value, provisioned.path, X_VOLUME_KEYS, {
        strictExtensions: true,
        where: "x-volumes",
      });
      sizeNode = keys.get("size")?.value ?? null;
      sizePath = keys.get("size")?.path ?? provisioned.path;
    }
    let sizeBytes: number | null;
    if (sizeNode === null && isMapping(provisioned.value)) {
      // A mapping without `size` takes the default Volume size of the Machine that creates it (0 here).
      sizeBytes = 0;
    } else if (sizeNode === null) {
      reader.fail(
        provisioned.keyNode,
        provisioned.path,
        `missing required key "size": a Provisioned Volume needs a maximum size, or {} for the Machine's default`,
      );
      continue;
    } else {
      sizeBytes = readBytes(reader, sizeNode, sizePath);
      if (sizeBytes === 0) {
        reader.fail(
          sizeNode,
          sizePath,
          `size 0: a Provisioned Volume needs a size above 0 (or {} for the Machine's default)`,
        );
        continue;
      }
    }
    if (sizeBytes === null) continue;
    const existing = out[provisioned.key];
    if (existing?.external) {
      reader.fail(
        provisioned.keyNode,
        provisioned.path,
        `volume "${provisioned.key}" is external: it cannot be a Provisioned Volume`,
      );
      continue;
    }
    out[provisioned.key] = existing === undefined
      ? {
        name: provisioned.key,
        external: false,
        dockerName: `${project}_${provisioned.key}`,
        driver: null,
        driverOptions: {},
        labels: {},
        sizeBytes,
      }
      : { ...existing, sizeBytes };
  }
  return sorted(out);
}
