import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import * as download from './file/download.operation';
import * as generate from './image/generate.operation';
import * as get from './publication/get.operation';
import * as getMany from './publication/getMany.operation';
import { errorFacts, imagePackError } from '../shared/errors';
import { asNodeError, errorItem } from '../shared/execution';
import { runsAsTool, toolErrorItem } from '../shared/tool';

type Operation = (
	this: IExecuteFunctions,
	items: INodeExecutionData[],
) => Promise<INodeExecutionData[]>;

const operations: Record<string, Record<string, Operation>> = {
	image: { generate: generate.execute },
	publication: { get: get.execute, getMany: getMany.execute },
	file: { download: download.execute },
};

export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const resource = this.getNodeParameter('resource', 0) as string;
	const operation = this.getNodeParameter('operation', 0) as string;
	const run = operations[resource]?.[operation];
	if (!run) {
		throw imagePackError(
			this.getNode(),
			{ code: 'invalid_parameter', parameter: 'operation', charge: 'not_sent' },
			{ message: `The operation "${operation}" of "${resource}" is not supported` },
		);
	}
	const items = this.getInputData();
	try {
		return [await run.call(this, items)];
	} catch (error) {
		// An agent's tool must not throw: AI Agent 2.x hands the model an empty string, 3.x the bare
		// message. The model gets the whole story as the tool's result instead (see shared/tool.ts).
		if (runsAsTool(this)) {
			return [items.map((_item, itemIndex) => toolErrorItem(error, itemIndex, operation))];
		}
		// Under Continue On Fail only a failure before the item loop (the credential, the connection)
		// gets here. Thrown, n8n would pass the input items down the success output: every item
		// failed, so every item becomes an error item. A stopped execution runs no branch.
		if (this.continueOnFail() && errorFacts(error).code !== 'cancelled') {
			return [items.map((_item, itemIndex) => errorItem(error, itemIndex))];
		}
		throw asNodeError(this, error);
	}
}
