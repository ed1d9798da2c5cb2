import { Redis } from 'ioredis';
import { ServiceProcess } from './service-process.js';
import { accepts, freePort, waitUntil } from './ports.js';

/** A Redis child process with nothing on disk: killing it and starting it again yields an empty Redis. */
export class PrivateRedis {
  private process?: ServiceProcess;

  private constructor(readonly port: number) {}

  static async create(): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort());
    await redis.start();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.process = ServiceProcess.spawn(
      'redis',
      process.cwd(),
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
      {},
    );
    await waitUntil(() => accepts(this.port), 15_000, `Redis on port ${this.port}`);
  }

  cpuMs(): number {
    return this.process?.cpuMs() ?? 0;
  }

  /** Commands Redis has processed since it started, and when that was read. */
  async commandCount(): Promise<{ count: number; at: number }> {
    const redis = new Redis(this.url, { maxRetriesPerRequest: 1 });
    try {
      const info = await redis.info('stats');
      return { count: Number(/total_commands_processed:(\d+)/.exec(info)![1]), at: Date.now() };
    } finally {
      redis.disconnect();
    }
  }

  async commandsPerSecond(since: { count: number; at: number }): Promise<number> {
    const now = await this.commandCount();
    return Math.round(((now.count - since.count) * 1000) / (now.at - since.at));
  }

  /** SIGKILL: every key is gone, as after a restart of a Redis that keeps nothing on disk. */
  async kill(): Promise<void> {
    await this.process?.kill('SIGKILL');
  }
}
