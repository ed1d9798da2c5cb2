import { loadConfigOrExit } from './core/config/load-or-exit.js';
import { startTracing } from './core/tracing/tracing.js';

// The worker is imported only once tracing has started: its instrumentations patch modules as they load.
const config = loadConfigOrExit();
await startTracing(config.tracing, 'worker');
const { startWorker } = await import('./worker-process.js');
startWorker(config);
