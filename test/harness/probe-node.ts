/**
 * A test-only node that makes one call through the transport's typed calls, so transport
 * behaviour is observed through a real ExecuteContext and n8n's own HTTP helpers.
 */
import type {
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import {
	downloadBinary,
	generate,
	getConnection,
	getPublication,
	listPublications,
	signedFileLink,
} from '../../nodes/ImagePack/transport';

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
		const connection = await getConnection(this);
		if (action === 'link') {
			const link = await signedFileLink(this, connection, path, { timeoutMs });
			return [[{ json: { ...link }, pairedItem: 0 }]];
		}
		if (action === 'download') {
			const binary = await downloadBinary(this, connection, path);
			return [
				[
					{
						json: { fileName: binary.fileName, mimeType: binary.mimeType },
						binary: { data: binary },
						pairedItem: 0,
					},
				],
			];
		}
		const detailId = /\/image-pack-publications\/(\d+)$/.exec(path)?.[1];
		const response =
			action === 'post'
				? await generate(
						this,
						connection,
						{ prompt: 'x', session_id: 's_probe' },
						{
							acceptLanguage: 'en',
							timeoutMs,
						},
					)
				: detailId
					? await getPublication(this, connection, Number(detailId), { timeoutMs })
					: await listPublications(this, connection, { sinceId: 0, limit: 50 }, { timeoutMs });
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
