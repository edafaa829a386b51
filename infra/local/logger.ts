/** How the local runtime reports what happens in the background (failed jobs, requests, stops). */
export interface LocalLogger {
  info(message: string): void;
  error(message: string, error?: unknown): void;
}

export const consoleLogger: LocalLogger = {
  info: (message) => console.log(`[sluice] ${message}`),
  error: (message, error) => (error === undefined ? console.error(`[sluice] ${message}`) : console.error(`[sluice] ${message}`, error)),
};
