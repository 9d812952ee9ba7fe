// Command-line launcher: `npm run emulator [-- --port 4010]` (run via `node --import tsx`).
// Not linted as TypeScript, so this is the one place that reads argv/env and prints.
import { startEmulator } from './index.ts';

const args = process.argv.slice(2);
const flag = (name) => {
	const i = args.indexOf(`--${name}`);
	return i >= 0 ? args[i + 1] : undefined;
};
const port = Number(flag('port') ?? process.env.PORT ?? 4010);
const filePort = Number(flag('file-port') ?? process.env.FILE_PORT ?? port + 1);
const host = flag('host') ?? process.env.HOST ?? '127.0.0.1';
const credits = flag('credits') ?? process.env.CREDITS;

const emulator = await startEmulator({
	port,
	filePort: port === 0 ? 0 : filePort,
	host,
	defaultCredits: credits === undefined ? undefined : Number(credits),
});

console.log(`Image Pack API emulator
  base URL:     ${emulator.baseUrl}
  file host:    ${emulator.fileBaseUrl}
  API key:      ${emulator.apiKey}   (account ${emulator.accountId}, scopes generate:write assets:read documents:read)
  control API:  ${emulator.baseUrl}/_emulator   (test facility, no key; see test/emulator/README.md)
Ctrl-C stops it.`);

let stopping = false;
const stop = async () => {
	if (stopping) return;
	stopping = true;
	await emulator.close();
	process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
