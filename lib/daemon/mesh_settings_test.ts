import { equal, throws } from "node:assert/strict";
import { meshSettingsFromEnv } from "./mesh_settings.ts";

Deno.test("meshSettingsFromEnv: ployz0 only for the installed layout, none turns the mesh off", () => {
  const env = (vars: Record<string, string>) => (key: string) => vars[key];
  equal(meshSettingsFromEnv(env({}), { defaultLayout: true })?.interfaceName, "ployz0");
  equal(meshSettingsFromEnv(env({}), { defaultLayout: false }), undefined);
  equal(meshSettingsFromEnv(env({ PLOYZ_WG_INTERFACE: "none" }), { defaultLayout: true }), undefined);
  const lab = meshSettingsFromEnv(
    env({
      PLOYZ_WG_INTERFACE: "plz1",
      PLOYZ_ADVERTISE_ENDPOINTS: "192.0.2.11:51820",
      PLOYZ_MEMBERSHIP_STORE_UP_MS: "8000",
    }),
    { defaultLayout: false },
  );
  equal(lab?.interfaceName, "plz1");
  equal(lab?.advertiseEndpoints?.[0], "192.0.2.11:51820");
  equal(lab?.thresholds.storeUpMs, 8000);
  equal(lab?.thresholds.handshakeUpMs, 185_000);
  throws(
    () => meshSettingsFromEnv(env({ PLOYZ_WG_PORT: "-1" }), { defaultLayout: true }),
    /Invalid PLOYZ_WG_PORT "-1"/,
  );
});
