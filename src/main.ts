import { loadConfigOrExit } from './core/config/load-or-exit.js';
import { startTracing } from './core/tracing/tracing.js';

// The app is imported only once tracing has started: its instrumentations patch modules as they load.
const config = loadConfigOrExit();
await startTracing(config.tracing, 'api');
const { startApi } = await import('./api-process.js');
startApi(config);
