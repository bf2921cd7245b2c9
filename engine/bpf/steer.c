// SPDX-License-Identifier: Apache-2.0
/*
 * Fulcrum's XDP program: frames the engine owns go to its AF_XDP socket on the queue they
 * arrived on; every other frame goes on to the kernel, so a management address on the same
 * port (SSH, NITRO, routing daemons) keeps working while fulcrumd runs.
 *
 * The engine owns IPv4 frames to its VIPs and SNIPs (the `fulcrum_owned` map, kept by the
 * control plane in step with the published configuration), ARP about them (requests for
 * them, answers to them), and IPv4 frames from services that see clients' own addresses
 * (USIP), whose replies go to those addresses. A queue without a socket in `fulcrum_xsks` passes its frames on.
 *
 * Legacy map definitions and no BTF: this kernel exposes no BTF and needs none for these.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* The most queues per port and owned addresses per port; the engine checks both. */
#define MAX_QUEUES 256
#define MAX_OWNED 4096

struct bpf_map_def SEC("maps") fulcrum_xsks = {
	.type = BPF_MAP_TYPE_XSKMAP,
	.key_size = sizeof(__u32),
	.value_size = sizeof(__u32),
	.max_entries = MAX_QUEUES,
};

struct bpf_map_def SEC("maps") fulcrum_owned = {
	.type = BPF_MAP_TYPE_HASH,
	.key_size = sizeof(__u32),   /* an IPv4 address, network order */
	.value_size = sizeof(__u8),  /* what it is: 1 SNIP, 2 VIP, 3 USIP service (a source) */
	.max_entries = MAX_OWNED,
};

/* Offsets in an Ethernet frame: the IPv4 destination, ARP's target protocol address. */
#define ETH_HEADER 14
#define IPV4_SOURCE (ETH_HEADER + 12)
#define IPV4_DESTINATION (ETH_HEADER + 16)
/* `fulcrum_owned` values: addresses matched as destinations, and USIP services' addresses,
 * matched as sources (their replies go to clients' own addresses). */
#define OWNED_USIP_SOURCE 3
#define ARP_IPV4_LENGTH 28
#define ARP_TARGET_ADDRESS (ETH_HEADER + 24)

SEC("xdp")
int fulcrum_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 address;

	if (data + ETH_HEADER > end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		if (data + ETH_HEADER + 20 > end)
			return XDP_PASS;
		__builtin_memcpy(&address, data + IPV4_DESTINATION, sizeof(address));
	} else if (eth->h_proto == bpf_htons(ETH_P_ARP)) {
		if (data + ETH_HEADER + ARP_IPV4_LENGTH > end)
			return XDP_PASS;
		__builtin_memcpy(&address, data + ARP_TARGET_ADDRESS, sizeof(address));
	} else {
		return XDP_PASS;
	}
	__u8 *kind = bpf_map_lookup_elem(&fulcrum_owned, &address);
	if (kind && *kind != OWNED_USIP_SOURCE)
		return bpf_redirect_map(&fulcrum_xsks, ctx->rx_queue_index, XDP_PASS);
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	__builtin_memcpy(&address, data + IPV4_SOURCE, sizeof(address));
	kind = bpf_map_lookup_elem(&fulcrum_owned, &address);
	if (!kind || *kind != OWNED_USIP_SOURCE)
		return XDP_PASS;
	return bpf_redirect_map(&fulcrum_xsks, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Apache-2.0";
