import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import * as download from './file/download.operation';
import * as generate from './image/generate.operation';
import * as get from './publication/get.operation';
import * as getMany from './publication/getMany.operation';

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
		throw new NodeOperationError(
			this.getNode(),
			`The operation "${operation}" of "${resource}" is not supported`,
		);
	}
	return [await run.call(this, this.getInputData())];
}
