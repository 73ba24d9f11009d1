/**
 * Probing a unix socket.
 *
 * @module
 */

/** Whether something accepts connections on the unix socket `path` now. */
export async function socketAnswers(path: string): Promise<boolean> {
  try {
    const conn = await Deno.connect({ transport: "unix", path });
    conn.close();
    return true;
  } catch {
    return false;
  }
}
