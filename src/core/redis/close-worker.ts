import type { Logger } from '@nestjs/common';
import type { Worker } from 'bullmq';

/**
 * Closes a BullMQ worker, which waits for its jobs in flight. Its close also waits for its blocking Redis
 * connection, forever while Redis is unreachable: past `boundMs`, the connections are dropped instead.
 */
export async function closeWorker(worker: Worker, boundMs: number, logger: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), boundMs);
  });
  const closed = await Promise.race([worker.close().then(() => true), bound]);
  clearTimeout(timer);
  if (closed) return;
  logger.warn(`The ${worker.name} queue did not close in time (Redis unreachable?): dropping its connections`);
  await worker.disconnect().catch(() => undefined);
}
