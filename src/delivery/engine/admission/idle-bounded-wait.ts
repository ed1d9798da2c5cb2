/**
 * A wait in process for a slot that something (a workspace here, a host) frees from time to time: it lasts
 * while that something freed one within `idleMs` (checked first after `idleMs`), and at most `longestMs`.
 * `turn` is true once `wake` was called, false when the wait gave up; `gaveUp` runs just before then.
 */
export function idleBoundedWait(
  lastFreedAt: () => number,
  idleMs: number,
  longestMs: number,
  gaveUp: () => void,
): { turn: Promise<boolean>; wake: () => void } {
  const startedAt = Date.now();
  let wake!: () => void;
  const turn = new Promise<boolean>((resolve) => {
    const check = () => {
      const now = Date.now();
      const idle = now - lastFreedAt();
      const left = longestMs - (now - startedAt);
      if (idle < idleMs && left > 0) {
        timer = setTimeout(check, Math.min(idleMs - idle, left));
        return;
      }
      gaveUp();
      resolve(false);
    };
    let timer = setTimeout(check, idleMs);
    wake = () => {
      clearTimeout(timer);
      resolve(true);
    };
  });
  return { turn, wake };
}
