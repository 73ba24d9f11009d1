/**
 * The operator's Config Store (contexts, Saved States, Deployment records, receipts, registry credentials), and
 * nothing of the replicated Cluster store: what every CLI command opens without loading the CRDT, its sync and
 * its signing.
 *
 * @module
 */

export {
  type Allocation,
  ConfigStore,
  type ConfigStoreOptions,
  type ContextRecord,
  type DeploymentRecord,
  openConfigStore,
  type Receipt,
  type RegistryCredential,
  type SavedState,
  type VolumeRunRecord,
} from "../config_store.ts";
