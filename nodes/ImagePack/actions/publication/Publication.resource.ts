import type { INodeProperties } from 'n8n-workflow';

import * as get from './get.operation';
import * as getMany from './getMany.operation';
import { operationSelector } from '../operations';

export { get, getMany };

export const description: INodeProperties[] = [
	operationSelector('publication'),
	...get.description,
	...getMany.description,
];
