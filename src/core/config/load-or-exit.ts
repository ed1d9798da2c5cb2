import { ConfigError, loadConfig, type AppConfig } from './config.js';

/** Entrypoints call this first: a bad or missing variable stops the process with its name. */
export function loadConfigOrExit(): AppConfig {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
}
