/**
 * Runs the Image Pack action node in a real n8n execution context against this file's emulator (see
 * useEmulator): call `useActionNode()` at the top of a test file.
 */
import type { IDataObject, INodeExecutionData, INodeParameters } from 'n8n-workflow';

import { ImagePack } from '../../nodes/ImagePack/ImagePack.node';
import { useEmulator } from './emulator';
import { runNode } from './n8n';

export interface RunOptions {
	items?: INodeExecutionData[];
	continueOnFail?: boolean;
	apiKey?: string;
}

export type NodeFailure = Error & { description?: string; context?: IDataObject };

/** Generate's parameters with a prompt, overridden by `parameters`. */
export const generate = (parameters: INodeParameters = {}): INodeParameters => ({
	resource: 'image',
	operation: 'generate',
	prompt: 'A white sneaker on a marble pedestal',
	...parameters,
});

export function useActionNode() {
	const emulator = useEmulator();

	async function run(parameters: INodeParameters, options: RunOptions = {}) {
		const [output] = await runNode({
			nodeType: new ImagePack(),
			parameters,
			items: options.items,
			continueOnFail: options.continueOnFail,
			credentials: { baseUrl: emulator.baseUrl, apiKey: options.apiKey ?? emulator.apiKey },
		});
		return output;
	}

	async function runError(parameters: INodeParameters, options: RunOptions = {}) {
		try {
			await run(parameters, options);
		} catch (error) {
			return error as NodeFailure;
		}
		throw new Error('expected the node to fail');
	}

	/** The emulator account's credits now. */
	async function balance() {
		return (await emulator.control.getAccount(emulator.accountId)).credits;
	}

	return { emulator, run, runError, balance };
}
