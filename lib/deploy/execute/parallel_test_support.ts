// What a Machine RPC call throws when the request went out and no answer came back (see lib/rpc's client).
import { DeployError } from "../plan/errors.ts";

/** A transport failure after sending, as the RPC client reports it. */
export class RpcLikeError extends DeployError {
  constructor() {
    super(
      "unavailable",
      'Cannot reach the Machine RPC socket "three": connection closed before message completed',
      {
        "no_answer": true,
      },
    );
  }
}
