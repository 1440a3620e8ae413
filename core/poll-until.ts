/**
 * Waits, inside a live call, until `check` holds or `until` (epoch ms) has
 * passed, looking every `everyMs`: a timer inside a live call fires when due
 * (one left by a call that has ended may not). Resolves to whether it held.
 */
export async function pollUntil(
  check: () => boolean,
  until: number,
  everyMs = 2,
): Promise<boolean> {
  while (!check()) {
    if (Date.now() >= until) return false;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  return true;
}
