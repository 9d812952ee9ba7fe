/**
 * A test-only node that sends one request through the transport per input item, so transport
 * behaviour is observed through a real ExecuteContext and n8n's own HTTP helpers.
 */
import type {
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { apiRequest, downloadFile } from '../../nodes/ImagePack/shared/transport';

export class TransportProbe implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Transport Probe',
		name: 'transportProbe',
		group: ['transform'],
		version: 1,
		description: 'Test-only',
		usableAsTool: true,
		defaults: { name: 'Transport Probe' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'imagePackApi', required: true }],
		properties: [
			{ displayName: 'Action', name: 'action', type: 'string', default: 'get' },
			{
				displayName: 'Path',
				name: 'path',
				type: 'string',
				default: '/api/v1/image-pack-publications',
			},
			{ displayName: 'Timeout', name: 'timeoutMs', type: 'number', default: 5000 },
		],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const action = this.getNodeParameter('action', 0) as string;
		const path = this.getNodeParameter('path', 0) as string;
		const timeoutMs = this.getNodeParameter('timeoutMs', 0) as number;
		if (action === 'download') {
			const file = await downloadFile(this, path, 0);
			const binary = await this.helpers.prepareBinaryData(
				file.body as Buffer,
				file.fileName,
				file.mimeType,
			);
			return [
				[
					{
						json: { fileName: file.fileName, mimeType: file.mimeType },
						binary: { data: binary },
						pairedItem: 0,
					},
				],
			];
		}
		const response = await apiRequest<Record<string, unknown>>(this, {
			method: action === 'post' ? 'POST' : 'GET',
			path,
			body: action === 'post' ? { prompt: 'x' } : undefined,
			timeoutMs,
			uncertainOutcomeHint:
				'The generation may have run and may have been charged: check session s_probe.',
		});
		return [
			[
				{
					json: { body: response.body, requestId: response.requestId, status: response.status },
					pairedItem: 0,
				},
			],
		];
	}
}
