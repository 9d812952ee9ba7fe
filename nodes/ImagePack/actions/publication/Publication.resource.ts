import type { INodeProperties } from 'n8n-workflow';

import * as get from './get.operation';
import * as getMany from './getMany.operation';

export { get, getMany };

export const description: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		default: 'get',
		displayOptions: { show: { resource: ['publication'] } },
		options: [
			{
				name: 'Get',
				value: 'get',
				action: 'Get a publication',
				description:
					'Get one published image pack record with its manifest (text notes and images)',
			},
			{
				name: 'Get Many',
				value: 'getMany',
				action: 'Get many publications',
				description: 'List publication records in ascending ID order, optionally after a given ID',
			},
		],
	},
	...get.description,
	...getMany.description,
];
