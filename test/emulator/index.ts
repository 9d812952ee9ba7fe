/**
 * Programmatic entry point: `startEmulator({ port: 0 })` starts the public API listener and the
 * signed-link file listener and returns their URLs, a ready key and a typed control client.
 */
import { registerControlRoutes } from './control';
import { EmulatorControl } from './client';
import { buildServer } from './server';
import type { Runtime } from './server';
import { EmulatorState } from './state';

export { EmulatorControl } from './client';
export type * from './client';
export { MODELS, dimensions, chooseAutoModel, pricePerImage, LONG_SIDE } from './catalog';
export { renderPng, pngSize } from './png';

export const DEFAULT_API_KEY = 'sk_emulator_default_key';
export const DEFAULT_ACCOUNT_ID = 'acc_default';

export interface EmulatorOptions {
	/** Public API port; default 0 (random). */
	port?: number;
	/** Signed-link file host port; default 0 (random), always a different listener from `port`. */
	filePort?: number;
	/** Interface to bind; default '127.0.0.1'. */
	host?: string;
	/** Credits of the default account; default 1_000_000. */
	defaultCredits?: number;
	/** Value of the default key (must start with sk_); default DEFAULT_API_KEY. */
	apiKey?: string;
	/** Id of the default account; default 'acc_default'. */
	accountId?: string;
	/** Request-log entries kept (oldest dropped first); default 100,000. */
	requestLogLimit?: number;
}

export interface Emulator {
	/** Public API origin, no trailing slash, e.g. http://127.0.0.1:41234. */
	baseUrl: string;
	/** Origin of the signed-link "CDN" (another listener, another port). */
	fileBaseUrl: string;
	/** A ready key of the default account with all three scopes. */
	apiKey: string;
	accountId: string;
	control: EmulatorControl;
	close(): Promise<void>;
}

function origin(host: string, port: number): string {
	const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
	return `http://${shown}:${port}`;
}

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
	const host = options.host ?? '127.0.0.1';
	const stateOptions = {
		defaultCredits: options.defaultCredits ?? 1_000_000,
		apiKey: options.apiKey ?? DEFAULT_API_KEY,
		accountId: options.accountId ?? DEFAULT_ACCOUNT_ID,
		requestLogLimit: options.requestLogLimit ?? 100_000,
	};
	const runtime: Runtime = { state: new EmulatorState(stateOptions), fileBaseUrl: '', abort: new AbortController() };

	const files = buildServer(runtime, 'files');
	await files.listen({ port: options.filePort ?? 0, host });
	const fileAddress = files.server.address();
	runtime.fileBaseUrl = origin(host, typeof fileAddress === 'object' && fileAddress ? fileAddress.port : 0);

	const api = buildServer(runtime, 'api');
	let baseUrl = '';
	const info = () => ({
		baseUrl,
		fileBaseUrl: runtime.fileBaseUrl,
		apiKey: stateOptions.apiKey,
		accountId: stateOptions.accountId,
		controlPrefix: '/_emulator',
	});
	registerControlRoutes(
		api,
		runtime,
		() => (runtime.state = new EmulatorState(stateOptions)),
		info,
	);
	const listenError = await api.listen({ port: options.port ?? 0, host }).then(
		() => undefined,
		(err: unknown) => err,
	);
	if (listenError) {
		await files.close();
		throw listenError;
	}
	const apiAddress = api.server.address();
	baseUrl = origin(host, typeof apiAddress === 'object' && apiAddress ? apiAddress.port : 0);

	let closed: Promise<void> | undefined;
	return {
		baseUrl,
		fileBaseUrl: runtime.fileBaseUrl,
		apiKey: stateOptions.apiKey,
		accountId: stateOptions.accountId,
		control: new EmulatorControl(baseUrl),
		close: () =>
			(closed ??= (async () => {
				runtime.abort.abort();
				await Promise.all([api.close(), files.close()]);
			})()),
	};
}
