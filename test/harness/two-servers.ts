/**
 * The fixture of the tests against scripted servers: two of them, the API and another host (the
 * file host of signed links, or one the key must never reach), started before a file's tests and
 * closed after them, their logs emptied before each test; the transport's backoff is shortened and
 * its bounds restored before each test, as tests lower them. `run` runs the Image Pack node against
 * the API with a made-up key (`KEY`) that every test can look for in what comes out.
 */
import type { IDataObject, INodeExecutionData, INodeParameters } from 'n8n-workflow';

import { ImagePack } from '../../nodes/ImagePack/ImagePack.node';
import { limits, retryPolicy } from '../../nodes/ImagePack/transport/limits';
import { runNode } from './n8n';
import { type ScriptedServer, startScriptedServer } from './scripted-server';

export const KEY = ['sk', 'hostile', '0123456789abcdef'].join('_');

export type Failure = Error & { description?: string; context?: IDataObject };

/** A server that exists once `beforeAll` ran; usable as a ScriptedServer from then on. */
function late(get: () => ScriptedServer): ScriptedServer {
	return {
		get url() {
			return get().url;
		},
		get seen() {
			return get().seen;
		},
		script: (route, ...handlers) => get().script(route, ...handlers),
		close: async () => await get().close(),
	};
}

export function twoServers() {
	let api: ScriptedServer | undefined;
	let other: ScriptedServer | undefined;
	const savedPolicy = { ...retryPolicy };
	const savedLimits = { ...limits };
	beforeAll(async () => {
		api = await startScriptedServer();
		other = await startScriptedServer();
		retryPolicy.backoffMs = 5;
	});
	afterAll(async () => {
		Object.assign(retryPolicy, savedPolicy);
		await api?.close();
		await other?.close();
	});
	beforeEach(() => {
		api!.seen.length = 0;
		other!.seen.length = 0;
		Object.assign(limits, savedLimits);
	});
	const servers = { api: late(() => api!), other: late(() => other!) };

	/** The node's first output, run against the API (or `baseUrl`) with KEY. */
	async function run(
		parameters: INodeParameters,
		options: { items?: INodeExecutionData[]; continueOnFail?: boolean; baseUrl?: string } = {},
	) {
		const [output] = await runNode({
			nodeType: new ImagePack(),
			parameters,
			items: options.items,
			continueOnFail: options.continueOnFail,
			credentials: { baseUrl: options.baseUrl ?? servers.api.url, apiKey: KEY },
		});
		return output;
	}

	/** The error the node fails with. */
	async function runError(
		parameters: INodeParameters,
		options: { items?: INodeExecutionData[] } = {},
	) {
		try {
			await run(parameters, options);
		} catch (error) {
			return error as Failure;
		}
		throw new Error('expected the node to fail');
	}

	return { ...servers, run, runError };
}

/** Everything a failure or an output shows: message, description, context, JSON. */
export function shown(value: unknown): string {
	if (value instanceof Error) {
		const failure = value as Failure;
		return JSON.stringify({
			message: failure.message,
			description: failure.description,
			context: failure.context,
		});
	}
	return JSON.stringify(value);
}

export const generate = (parameters: INodeParameters = {}): INodeParameters => ({
	resource: 'image',
	operation: 'generate',
	prompt: 'A white sneaker',
	model: 'nano-banana-2',
	...parameters,
});

export function okGeneration(images = 1): IDataObject {
	return {
		ok: true,
		turn_id: 't_1',
		session_id: 's_1',
		credits_charged: 16 * images,
		duration_ms: 5,
		warnings: [],
		images: Array.from({ length: images }, (_unused, index) => ({
			id: `img_${index}`,
			filename: `a_${index}.png`,
			url: `/api/file/a_${index}.png`,
			width: 1,
			height: 1,
		})),
	};
}
