"""nccl parser: real c10d / NCCL / gloo lines -> events; look-alikes -> nothing from this parser.

Every line in REAL is verbatim from the source cited next to it (public issue, or the framework's
own template rendered where no issue line was found: marked [SRC]).
"""

from __future__ import annotations

import pytest

from nanscope.ingest.reader import Source
from nanscope.model import InputInfo
from nanscope.parsers.registry import all_parsers
from nanscope.pipeline import ScanResult, scan_source


def _events(text: str, name: str = "train.log") -> list:
    src = Source(name, None, text.encode("utf-8"))
    return list(scan_source(src, all_parsers(), InputInfo(name, None), ScanResult()))


def _mine(text: str, name: str = "train.log") -> list:
    return [e for e in _events(text, name) if e.framework == "nccl"]


REAL = [
    # github.com/hiyouga/LlamaFactory/issues/6269
    ("[rank0]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=544997376, NumelOut=68124672, Timeout(ms)=600000) ran for 600061 milliseconds before timing out.",
     "collective_timeout", 0, {"seq": 7753, "op": "_REDUCE_SCATTER_BASE", "timeout_ms": 600000}, {"ran_for_ms": 600061, "numel_in": 544997376}),
    # github.com/OFA-Sys/OFA/issues/271 (torch <= 2.0: no Numel fields, no rank prefix: rank from [Rank 1])
    ("[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out.",
     "collective_timeout", 1, {"seq": 469508, "op": "ALLREDUCE", "timeout_ms": 1800000}, {"numel_in": None}),
    # github.com/pytorch/pytorch/issues/118369 (glued to a progress bar)
    ("Epoch 0:   6%|██ consumed_samples=2.56e+7][E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96120, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 25624887 milliseconds before timing out.",
     "collective_timeout", 0, {"seq": 96120}, {"ran_for_ms": 25624887}),
    # github.com/huggingface/diffusers/issues/12422 (blocking wait)
    ("[rank1]:[E1002 18:16:40.662691402 ProcessGroupNCCL.cpp:756] [Rank 1] Work WorkNCCL(SeqNum=2521, OpType=ALLREDUCE, NumelIn=160672064, NumelOut=160672064, Timeout(ms)=600000) timed out in blocking wait.",
     "collective_timeout", 1, {"seq": 2521, "timeout_ms": 600000}, {"blocking_wait": True}),
    # github.com/hiyouga/LlamaFactory/issues/7396 (2.3-2.5 status line; PG 1 is not the default group)
    ("[rank0]:[E321 02:07:08.465150152 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception (either an error or timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.",
     "collective_timeout", 0, {"pg": "1", "seq": 1580, "enqueued": 1582, "completed": 1579}, {"pg_rank": 0}),
    # github.com/modelscope/DiffSynth-Studio/issues/458
    ("[rank4]:[E318 07:39:53.792780659 ProcessGroupNCCL.cpp:1834] [PG ID 2 PG GUID 9 Rank 4] Timeout at NCCL work: 610, last enqueued NCCL work: 616, last completed NCCL work: 609.",
     "collective_timeout", 4, {"pg": "9", "seq": 610, "enqueued": 616, "completed": 609}, {}),
    # github.com/snowflakedb/ArcticTraining/issues/219 (2.7+: two spaces, no period)
    ("[rank5]:[E626 16:48:25.440238649 ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID 0(default_pg) Rank 5]  failure detected by watchdog at work sequence id: 120049 PG status: last enqueued work: 120051, last completed work: 120048",
     "collective_timeout", 5, {"pg": "0(default_pg)", "seq": 120049, "enqueued": 120051, "completed": 120048}, {}),
    # github.com/modelscope/DiffSynth-Studio/issues/458
    ("[rank4]:[E318 07:39:53.792790830 ProcessGroupNCCL.cpp:630] [Rank 4] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
     "watchdog_abort", 4, None, {}),
    # github.com/salesforce/MUST/issues/7 (old single-line form, no prefix)
    ("[E ProcessGroupNCCL.cpp:341] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data. To avoid this inconsistency, we are taking the entire process down.",
     "watchdog_abort", None, None, {}),
    # github.com/modelscope/ms-swift/pull/9443 (TORCH_DISTRIBUTED_DEBUG=DETAIL)
    ("[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=3104, OpType=ALLREDUCE, TensorShape=[195812480], TensorDtypes=BFloat16, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided (default), requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))), but Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=3104, OpType=ALLREDUCE, TensorShape=[51123456], TensorDtypes=BFloat16)).Collectives differ in the following aspects:   Tensor Tensor shapes: 195812480vs 51123456",
     "collective_desync", 1, {"seq": 3104, "op": "ALLREDUCE"}, {"mismatch_ranks": [1, 0], "state": "mismatch"}),
    # [SRC] TraceUtils.h analyzeMissingRanks rendered (no issue line found), under torchrun --tee
    ("[default0]:\t - To our best knowledge, ranks [1, 2] are the lagging ranks that caused this timeout. They never joined any collectives",
     "collective_desync", 0, None, {"lagging_ranks": [1, 2], "state": "never_joined"}),
    # [SRC] TraceUtils.h analyzeLaggingRanks rendered
    ("[default3]:\t   - [0] joined but didn't finish collective #17 (count from 1)",
     "collective_desync", 3, {"seq": 17}, {"lagging_ranks": [0], "state": "joined_not_finished"}),
    ("[default3]:\t     [1, 2] finished collective #17, but didn't join collective #18 (count from 1)",
     "collective_desync", 3, {"seq": 18}, {"lagging_ranks": [1, 2], "state": "not_joined_next"}),
    # index blog page quoting torch 2.x (NCCLUtils.hpp template)
    ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3",
     "nccl_error", None, None, {"code": "ncclSystemError", "nccl_version": "2.19.3"}),
    # test fixture in the index, torch 1.x form (RuntimeError, no parenthetical)
    ("RuntimeError: NCCL error in: /opt/conda/conda-bld/pytorch-nightly_1668734418820/work/torch/lib/c10d/ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL version 2.14.3",
     "nccl_error", None, None, {"code": "ncclSystemError", "reason": "unhandled system error"}),
    # github.com/NVIDIA/nccl/issues/928 (NCCL 2.10-2.14 form)
    ("H100-2:19989:20082 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer fe80::966d:ae03:8b:df78%ib0<53249> with error 4, opcode 32564, len 32564, vendor err 81 (Send)",
     "nccl_network", None, None, {"peer": "fe80::966d:ae03:8b:df78%ib0<53249>", "code": 4, "peer_port": 53249}),
    # github.com/NVIDIA/nccl/issues/1405 (status= form, plugin)
    ("kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f",
     "nccl_network", None, None, {"peer_host": "10.216.210.236", "code": 12}),
    # github.com/NVIDIA/nccl/issues/1664 (title; vendor plugin NET/IBP:)
    ("NET/IBP:Got completion from peer 7.6.13.83<36315> with status=12 opcode=32698 len=32696 vendor err 129 (Send)",
     "nccl_network", None, None, {"code": 12}),
    # [SRC] NVIDIA/nccl src/transport/net_ib/p2p.cc:688 (HEAD 5067397c) rendered: symbolic status
    ("node1:123:456 [2] NCCL WARN NET/IB: Got completion from peer 10.0.0.2<40000> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  hca mlx5_0",
     "nccl_network", None, None, {"code": 12, "status_name": "IBV_WC_RETRY_EXC_ERR"}),
    # sample_logs/torch/ddp_crash_rank1.log (real gloo run)
    ("[default2]:[rank2]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:41364. This is typically caused by a remote worker crashing. Check the logs of the remote worker before reporting an error. GLHF! 🏖️",
     "peer_connection_lost", 2, None, {"backend": "gloo", "peer": "[127.0.0.1]:41364"}),
    # sample_logs/torch/ddp_hang_rank3.log (real gloo run)
    ("[default1]:[rank1]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 15000ms for recv operation to complete",
     "collective_timeout", 1, {"timeout_ms": 15000}, {"backend": "gloo", "transport_op": "recv"}),
    # sample_logs/multinode/extra_collective.log (real gloo run: one rank issued an extra all_reduce);
    # the rank that prints it is one side of the mismatch, so the event claims no other rank
    ("[default1]:  what():  [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 1384 vs 4. Received data size doesn't match expected size. Is there a distributed collective mismatch in your code?",
     "collective_desync", 1, None, {"backend": "gloo", "state": "size_mismatch", "received_bytes": 1384, "expected_bytes": 4}),
    # PrimeIntellect-ai/prime-diloco#68 (1857.log): the same gloo check before pytorch/gloo#456 added its hint
    ("  what():  [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] op.preamble.length <= op.nbytes. 1046204 vs 1040256",
     "collective_desync", None, None, {"backend": "gloo", "state": "size_mismatch", "received_bytes": 1046204, "expected_bytes": 1040256}),
    # pytorch/pytorch#85604 (1850.log): socket.cpp's per-address warning, the store's port is taken
    ("[W socket.cpp:401] [c10d] The server socket has failed to listen on [::]:47531 (errno: 98 - Address already in use).",
     "port_in_use", None, None, {"backend": "c10d-store", "port": "47531", "errno": 98}),
    # intelligent-machine-learning/dlrover#443 (1851.log): the exception that joins the recorded errors
    ("RuntimeError: The server socket has failed to listen on any local network address. The server socket has failed to bind to [::]:44796 (errno: 98 - Address already in use). The server socket has failed to bind to 0.0.0.0:44796 (errno: 98 - Address already in use).",
     "port_in_use", None, None, {"port": "44796", "errno": 98}),
    # om-ai-lab/VLM-R1#289 (1853.log): the libuv store (torch 2.2+)
    ("RuntimeError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use.",
     "port_in_use", None, None, {"port": "29500", "errno": 98}),
    # YYuX-1145/Bert-VITS2-Integration-package#54 (1880.log): Windows, WSAEADDRINUSE with the system's Chinese message
    ("[W socket.cpp:436] [c10d] The server socket has failed to bind to [DESKTOP-L9L2GVM]:10086 (system error: 10048 - 通常每 个套接字地址(协议/网络地址/端口)只允许使用一次。).",
     "port_in_use", None, None, {"port": "10086", "errno": 10048}),
    # lllyasviel/ControlNet#382 (1859.log): the client gave up at its connect deadline
    ("TimeoutError: The client socket has timed out after 1800s while trying to connect to (127.0.0.1, 48391).",
     "peer_connection_lost", None, None, {"backend": "c10d-store", "peer": "127.0.0.1:48391", "reason": "connect_timeout",
                                          "connect_timeout": "1800s"}),
    # pytorch/pytorch#107021: torch 2.0's connect deadline prints host:port without the parentheses
    ("[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to connect to 192.0.0.1:1234",
     "peer_connection_lost", None, None, {"peer": "192.0.0.1:1234", "reason": "connect_timeout"}),
    # alibaba/Pai-Megatron-Patch#468 (title), huggingface/accelerate#1645: Utils.hpp's SYSCHECK on the store's recv timeout
    ("torch.distributed.DistStoreError: Socket Timeout",
     "collective_timeout", None, None, {"backend": "store", "store_wait": True}),
    ("RuntimeError: Socket Timeout",
     "collective_timeout", None, None, {"backend": "store"}),
    # NVIDIA/nccl-tests#15 (1871.log): the binary NCCL 2.2's SYSCHECK WARN, without the "NCCL" tag
    ("gpu-bql-144-103:18553:18611 [0] include/socket.h:360 WARN Call to connect failed : Connection timed out",
     "nccl_error", None, None, {"code": "ncclSystemError", "reason": "call to connect failed: Connection timed out"}),
    # NVIDIA/nccl#210 (1873.log): socket creation, no IP interface on the host
    ("include/socket.h:344 WARN Socket creation failed : Address family not supported by protocol",
     "nccl_error", None, None, {"code": "ncclSystemError"}),
    # NVIDIA/nccl#975 (1877.log): 2.18's socketStartConnect, a connect that is not retried
    ("n122-246-085:12251:12400 [5] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to fe80::966d:ae03:a2:8cf0%ib1<17943> failed : Software caused connection abort",
     "nccl_error", None, None, {"peer": "fe80::966d:ae03:a2:8cf0%ib1<17943>"}),
    # NVIDIA/nccl-tests#111 (1876.log): the proxy thread failed a peer's connect (retcode 2: ncclSystemError)
    ("us1-shopee-ai-worker-live-10-67-208-67:406794:406838 [0] proxy.cc:1040 NCCL WARN [Proxy Service 8] Failed to execute operation Connect from rank 8, retcode 2",
     "nccl_error", None, None, {"code": "ncclSystemError", "proxy_op": "Connect", "result": 2}),
    # pytorch/elastic#134 (1872.log): NCCL 2.3 - 2.11 name no peer
    ("multigpu:141:158 [0] include/socket.h:416 NCCL WARN Net : Connection closed by remote peer",
     "peer_connection_lost", None, None, {"backend": "nccl", "nccl_info": False}),
    # NVIDIA/nccl-tests#15 (1871.log): the same before 2.3
    ("gpu-bql-144-103:18553:18612 [0] include/socket.h:371 WARN Connection closed by remote peer",
     "peer_connection_lost", None, None, {"backend": "nccl"}),
    # pytorch docs/source/distributed.rst (monitored_barrier): rank 0 names the rank that never acked
    ("RuntimeError: Rank 1 failed to pass monitoredBarrier in 2000 ms",
     "collective_timeout", None, {"op": "BARRIER", "timeout_ms": 2000}, {"waited_for": 1, "failed_ranks": [1]}),
    # [SRC] torch/csrc/distributed/c10d/ProcessGroupGloo.cpp wait_all_ranks=True, rendered: several ranks, none claimed
    ("[Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier in 30000 ms",
     "collective_timeout", 0, {"timeout_ms": 30000}, {"failed_ranks": [1, 2], "pg_rank": 0}),
    # [SRC] NVIDIA/nccl src/bootstrap.cc (2.7 - 2.30) rendered: no interface for the bootstrap
    ("node1:1234:1234 [0] bootstrap.cc:45 NCCL WARN Bootstrap : no socket interface found",
     "nccl_no_interface", None, None, {"code": "ncclInternalError", "reason": "Bootstrap : no socket interface found", "phase": "bootstrap"}),
    # pytorch/pytorch#29482 (2405.log): NCCL 2.4's WARN with the file tag
    ("gpu617:22841:22841 [0] bootstrap.cc:37 NCCL WARN Bootstrap : no socket interface found",
     "nccl_no_interface", None, None, {"transport": "socket", "comm_id": False}),
    # EvolvingLMMs-Lab/open-r1-multimodal#7 (2403.log): torch's `Last error:` echo, under its rank prefix
    ("[rank0]: Bootstrap : no socket interface found",
     "nccl_no_interface", 0, None, {"code": "ncclInternalError"}),
    # [SRC] NVIDIA/nccl src/bootstrap.cc with NCCL_COMM_ID (2.4 - 2.30) and src/transport/net_socket.cc, rendered
    ("node1:1234:1234 [0] bootstrap.cc:120 NCCL WARN NET/Socket : No usable listening interface found",
     "nccl_no_interface", None, None, {"code": "ncclSystemError", "comm_id": True}),
    ("node1:1234:1234 [0] transport/net_socket.cc:61 NCCL WARN NET/Socket : no interface found",
     "nccl_no_interface", None, None, {"phase": "net_socket"}),
    # NVIDIA/nccl#969 (2400.log): 2.12 - 2.19's IB size check, behind a pdsh host prefix
    ("10.10.23.10: so-ucloud-10-10-23-10:1307367:1307586 [0] transport/net_ib.cc:1038 NCCL WARN NET/IB : req 0/1 tag 0 peer 10.10.23.6<58683> collective mismatch error, local size 496640 remote size 65536",
     "nccl_network", None, None, {"peer": "10.10.23.6<58683>", "peer_host": "10.10.23.6", "local_size": 496640, "remote_size": 65536, "size_check": True}),
    # NVIDIA/nccl#615 (2401.log): the 2.3 - 2.9 wording, no peer
    ("train-run-env3-list2-parallel-0:15483:15645 [0] transport/net_ib.cc:665 NCCL WARN NET/IB : collective mismatch error local size 546816 remote 524288 addr 7ff7d1530000 rkey 2553d seq 14/1c",
     "nccl_network", None, None, {"peer": None, "local_size": 546816, "remote_size": 524288}),
    # [SRC] NVIDIA/nccl v2.10.3-1 src/transport/net_ib.cc:684 rendered: the peer before the words
    ("node1:1234:1300 [0] transport/net_ib.cc:684 NCCL WARN NET/IB : peer 10.0.0.2<41234> collective mismatch error local size 65536 remote 32768 addr 7f00 rkey 1a seq 3/4",
     "nccl_network", None, None, {"peer_host": "10.0.0.2", "local_size": 65536, "remote_size": 32768}),
    # NVIDIA/nccl#296 (2402.log): 2.4's kernel check; the rank it names is the printing one, not claimed
    ("init.cc:1247 NCCL WARN Mismatched collective detected, please check your collective calls at and around rank 39. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective logs",
     "collective_desync", None, None, {"pg_rank": 39, "state": "nccl_device_check", "suspected": False}),
    # NVIDIA/nccl#214: the same, several ranks of one node (node-8x-v100-nvlink-1, device 3)
    ("node-8x-v100-nvlink-1:39719:39719 [3] init.cu:1197 NCCL WARN Mismatched collective detected, please check your collective calls at and around rank 11. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective logs",
     "collective_desync", None, None, {"pg_rank": 11}),
    # NVIDIA/nccl#268 (2431.log): 2.4's socket size check
    ("hvd1:2918:3333 [0] external/nccl_archive/src/transport/net_socket.cc:200 NCCL WARN NET/Socket : message truncated : receiving 696320 bytes instead of 32768",
     "collective_desync", None, None, {"transport": "socket", "received_bytes": 696320, "expected_bytes": 32768, "peer": None}),
    # NVIDIA/nccl#626 (2432.log): the 2.10 wording, wrapped by the paste after its colon
    ("transport/net_socket.cc:424 NCCL WARN NET/Socket : peer 192.168.161.30<59210> message truncated :",
     "collective_desync", None, None, {"peer": "192.168.161.30<59210>", "received_bytes": None}),
    # [SRC] NVIDIA/nccl v2.4.8-1 src/init.cc:1256 rendered: the suspected form
    ("node1:1234:1234 [0] init.cc:1256 NCCL WARN Your program may be hanging, this may be caused by a collective mismatch around rank 3. Please check your collective calls at and around this rank. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective logs",
     "collective_desync", None, None, {"pg_rank": 3, "suspected": True}),
    # [SRC] NVIDIA/nccl src/proxy.cc INFO, v2.14-HEAD, with NCCL's host:pid:tid prefix, under torchrun --tee
    ("[default0]:node0:2211:2290 [0] NCCL INFO [Service thread] Connection closed by localRank 1",
     "peer_connection_lost", 0, None, {"peer_local_rank": 1, "nccl_info": True}),
]


@pytest.mark.parametrize("line,error,rank,coll,fields", REAL, ids=[f"{i}-{r[1]}" for i, r in enumerate(REAL)])
def test_real_lines(line, error, rank, coll, fields):
    evs = _mine(line + "\n")
    assert len(evs) == 1, evs
    ev = evs[0]
    assert ev.kind == "error" and ev.error == error
    assert ev.rank == rank
    for k, v in (coll or {}).items():
        assert getattr(ev.collective, k) == v, k
    for k, v in fields.items():
        assert ev.fields[k] == v, k


def test_gloo_exception_keeps_its_type_and_message():
    ev = _mine("[default0]:[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:129] Timed out waiting 15000ms for send operation to complete\n")[0]
    assert ev.exc_type == "RuntimeError"
    assert ev.message.startswith("[/__w/pytorch/pytorch/third_party/gloo")
    assert ev.fields["transport_op"] == "send"


def test_flight_recorder_notice_is_a_warning():
    # github.com/snowflakedb/ArcticTraining/issues/219
    evs = _mine("[rank1]:[E626 16:48:25.440243908 ProcessGroupNCCL.cpp:670] Stack trace of the failed collective not found, potentially because FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.\n")
    assert [(e.kind, e.warning, e.rank) for e in evs] == [("warning", "flight_recorder_disabled", 1)]


def test_one_timeout_printed_three_times_is_one_event_then_merged_with_pg_status():
    # github.com/huggingface/open-r1/issues/620 + github.com/vllm-project/vllm/issues/6042 shapes:
    # the exception, the PG status line, and the watchdog-thread repeat of the same SeqNum.
    log = (
        "(RayWorkerWrapper pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=158046, OpType=GATHER, NumelIn=2867200, NumelOut=0, Timeout(ms)=600000) ran for 600027 milliseconds before timing out.\n"
        "(RayWorkerWrapper pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:1537] [PG 1 Rank 1] Timeout at NCCL work: 158046, last enqueued NCCL work: 158046, last completed NCCL work: 158045.\n"
        "(RayWorkerWrapper pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:577] [Rank 1] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.\n"
        "(RayWorkerWrapper pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:583] [Rank 1] To avoid data inconsistency, we are taking the entire process down.\n"
        "(RayWorkerWrapper pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:1414] [PG 1 Rank 1] Process group watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=158046, OpType=GATHER, NumelIn=2867200, NumelOut=0, Timeout(ms)=600000) ran for 600027 milliseconds before timing out.\n"
    )
    evs = _mine(log)
    assert [(e.error, e.loc.line) for e in evs] == [
        ("collective_timeout", 1), ("collective_timeout", 2), ("watchdog_abort", 3)]
    assert all(e.rank == 1 for e in evs)
    status = evs[1].collective
    assert (status.seq, status.op, status.enqueued, status.completed, status.timeout_ms) == (158046, "GATHER", 158046, 158045, 600000)


def test_nccl_error_detail_line_is_folded_into_the_error():
    log = (
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3\n"
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. \n"
        "Last error:\n"
    )
    evs = _mine(log)
    assert [e.error for e in evs] == ["nccl_error"]
    assert evs[0].exc_type == "torch.distributed.DistBackendError"


def test_remote_error_detail_alone_is_an_nccl_error():
    # NCCLUtils.cpp getNcclErrorDetailStr text on its own (the `NCCL error in:` line was cut off)
    evs = _mine("[rank3]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n")
    assert [(e.error, e.rank, e.fields["code"]) for e in evs] == [("nccl_error", 3, "ncclRemoteError")]


def test_subgroup_rank_is_not_taken_as_global_rank_without_prefix():
    # [PG 1 Rank 0] is rank 0 of process group 1; with no launcher prefix the global rank is unknown
    ev = _mine("[E321 02:07:08.465150152 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception (either an error or timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.\n")[0]
    assert ev.rank is None and ev.fields["pg_rank"] == 0


def test_gloo_lines_in_real_sample_are_taken_before_the_generic_python_parser():
    from conftest import SAMPLES

    data = (SAMPLES / "torch" / "ddp_hang_rank3.log").read_bytes()
    evs = _events(data.decode("utf-8"), "ddp_hang_rank3.log")
    timeouts = [e for e in evs if e.kind == "error" and e.error == "collective_timeout"]
    assert sorted(e.rank for e in timeouts) == [0, 1, 2]
    assert {e.framework for e in timeouts} == {"nccl"}


LOOKALIKES = [
    # research §1.11 look-alikes, and config / env dumps
    "[rank0]:[I1118 20:32:23.955028747 ProcessGroupNCCL.cpp:2005] [PG ID 0 PG GUID 0(default_pg) Rank 0] NCCL Work update periodically: last enqueued NCCL work: 5, last completed NCCL work: 5.",
    "node0:2211:2211 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.1<0>",
    "node0:2211:2211 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
    "node0:2211:2290 [0] NCCL INFO transport/net.cc:1302 -> 6",
    "NCCL_DEBUG=INFO",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING=1 NCCL_TIMEOUT=1800",
    "  nccl_timeout: 1800",
    "ddp_timeout=1800, timeout=datetime.timedelta(seconds=1800)",
    "[W ProcessGroupNCCL.cpp:1234] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default now, this environment variable is thus deprecated. (function operator())",
    "See https://pytorch.org/docs/stable/distributed.html#debugging-torch-distributed-applications for the Watchdog caught collective operation timeout FAQ",
    "To debug NCCL errors set TORCH_NCCL_TRACE_BUFFER_SIZE and TORCH_NCCL_DESYNC_DEBUG=1",
    "ConnectionResetError: [Errno 104] Connection reset by peer",
    # the listen failure's summary line alone says no reason (EADDRINUSE, EACCES ...): its per-address lines do
    "[E socket.cpp:435] [c10d] The server socket has failed to listen on any local network address.",
    "OSError: [Errno 98] Address already in use",
    # [SRC] NVIDIA/nccl src/transport/net_ib.cc rendered: IB init fails, NCCL goes on with sockets
    "node1:1234:1234 [0] transport/net_ib.cc:170 NCCL WARN NET/IB : No IP interface found.",
    # a host without IPv6: the store falls back to 0.0.0.0 (microsoft/vidur#49, a run that finished)
    "(BenchmarkRunner pid=10896) [W socket.cpp:464] [c10d] The server socket cannot be initialized on [::]:50704 (errno: 97 - Address family not supported by protocol).",
    # a retried connect's INFO and a user's prose about a failed call carry no NCCL WARN header
    "node0:2211:2211 [0] NCCL INFO Call to connect returned Connection refused, retrying",
    "WARNING: Call to connect failed : Connection timed out",
    # the socket transport's interface count and a working bootstrap (maskrcnn-benchmark#628, NVIDIA/nccl#1866)
    "55d3479b71fb:91:91 [0] NCCL INFO NET/Socket : 1 interfaces found",
    "cl4-gpu03-vm:1134070:1134070 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to enp9s0np0",
    "cl4-gpu03-vm:1134070:1134070 [0] NCCL INFO Bootstrap: Using enp9s0np0:10.99.0.2<0>",
    # prose about the error is not the bare echo of it
    "I get Bootstrap : no socket interface found when NCCL_SOCKET_IFNAME=eth0 is set",
]


@pytest.mark.parametrize("line", LOOKALIKES)
def test_lookalikes_give_no_event(line):
    assert _mine(line + "\n") == []


def _errors(tmp_path, text):
    from nanscope import api
    p = tmp_path / "x.log"
    p.write_text(text + "\n", encoding="utf-8")
    return [e for e in api.events([str(p)]) if e.kind == "error"]


def test_unprefixed_timeouts_of_several_ranks_are_one_event_each(tmp_path):
    # OFA-Sys/OFA#271: one paste, no launcher prefix, the rank only in c10d's message
    lines = [f"[E ProcessGroupNCCL.cpp:737] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, "
             f"OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out." for r in (1, 3, 2)]
    assert [e.rank for e in _errors(tmp_path, "\n".join(lines))] == [1, 3, 2]


def test_old_nccl_socket_wording(tmp_path):
    # NVIDIA/nccl#795 (NCCL 2.14)
    evs = _errors(tmp_path, "a100-st-p4d24xlarge-22:183006:183220 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from "
                            "10.200.84.247<58355> failed : Broken pipe\n"
                            "a100-st-p4d24xlarge-22:183006:183181 [1] misc/socket.cc:538 NCCL WARN Net : Connection closed by "
                            "remote peer a100-st-p4d24xlarge-22.pcluster<47861>")
    assert [e.error for e in evs] == ["peer_connection_lost", "peer_connection_lost"]
    assert evs[0].fields["reason"] == "Broken pipe"


# sample_logs/multinode/restart_attempts.log (real two-node gloo run, torch 2.13.0+cpu): attempt 1's
# workers cannot reach their peers at init; both the c10d E-line and the RuntimeError
GLOO_CONNECT = [
    '1: [default0]:[E1201 09:56:06.615874431 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed with [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:152] timed out connecting: SO_ERROR: Connection refused, remote=[127.0.0.1]:20874$2',
    '1: [default0]:RuntimeError: Gloo connectFullMesh failed with [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:152] timed out connecting: SO_ERROR: Connection refused, remote=[127.0.0.1]:20874$2',
]


@pytest.mark.parametrize("line", GLOO_CONNECT, ids=["c10d-eline", "runtime-error"])
def test_gloo_connect_full_mesh_failure_is_a_lost_peer(line):
    evs = _mine(line + "\n")
    assert [(e.error, e.fields["reason"], e.fields["backend"]) for e in evs] == [("peer_connection_lost", "connect", "gloo")]
    assert evs[0].fields["peer"] is None or evs[0].fields["peer"].startswith("[127.0.0.1]:")
    # `1: [default0]:` alone: node 1, local rank 0; node 0 is not in the text, so no global rank
    assert (evs[0].rank, evs[0].origin.local_rank) == (None, 0)


def test_no_interface_after_torch_error_is_one_primary_finding_on_its_rank(tmp_path):
    # EvolvingLMMs-Lab/open-r1-multimodal#7 (2403.log): the NCCL error and its `Last error:` are one incident;
    # the new signature names it and takes the generic nccl-error's place, rank 0 from the prefix
    from nanscope import api
    p = tmp_path / "x.log"
    p.write_text("""[rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2588, internal error - please report this issue to the NCCL developers, NCCL version 2.21.5
[rank0]: ncclInternalError: Internal check failed.
[rank0]: Last error:
[rank0]: Bootstrap : no socket interface found
""", encoding="utf-8")
    report = api.diagnose([str(p)])
    assert [f.id for f in report.findings] == ["nccl-no-socket-interface"]
    assert report.findings[0].initiating_rank == 0
    assert "NCCL_SOCKET_IFNAME" in report.findings[0].fix
    assert "Bootstrap : no socket interface found" in report.findings[0].summary


# NVIDIA/nccl src/init.cc "Duplicate GPU detected : rank %d and rank %d both on CUDA device %lx": the WARN
# (NeMo RL#3155, a Ray actor's prefix, 2602.log) and torch's `Last error:` echo (verl#161, 2600.log)
@pytest.mark.parametrize("line", [
    "(MegatronPolicyWorker pid=1391870) [2026-07-10 06:19:36] pool0-00008:1391870:1393239 [7] init.cc:904 NCCL WARN Duplicate GPU detected : rank 15 and rank 7 both on CUDA device e4000",
    "Duplicate GPU detected : rank 15 and rank 7 both on CUDA device e4000",
], ids=["warn", "last-error"])
def test_duplicate_gpu_is_its_own_error_naming_both_ranks(line):
    evs = [e for e in _mine(line + "\n") if e.kind == "error"]
    assert [(e.error, e.fields["duplicate_ranks"], e.fields["cuda_device"]) for e in evs] == [
        ("nccl_duplicate_gpu", [7, 15], "e4000")]
    assert evs[0].rank is None  # the pair shares a GPU; neither is claimed


def test_duplicate_gpu_after_torch_error_is_the_one_finding(tmp_path):
    # verl-project/verl#161 (2600.log): the DistBackendError and its `Last error:` are one incident; the specific
    # signature takes the generic nccl-error's place and claims no initiating rank
    from nanscope import api
    p = tmp_path / "x.log"
    p.write_text("""torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.20.5
ncclInvalidUsage: This usually reflects invalid usage of NCCL library.
Last error:
Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 10
""", encoding="utf-8")
    report = api.diagnose([str(p)])
    assert [f.id for f in report.findings] == ["nccl-duplicate-gpu"]
    assert report.findings[0].initiating_rank is None
    assert "set_device" in report.findings[0].fix


# NVIDIA/nccl src/include/checks.h CUDACHECK on NCCL's own allocation (NVIDIA/nccl#1235, 2611.log): the OOM itself
def test_nccl_cuda_failure_out_of_memory_is_a_cuda_oom_other_cuda_errors_stay_nccl_errors():
    oom = _mine("ng30903:3063028:3066152 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n")
    assert [(e.error, e.fields["source"], e.fields["cuda_error"]) for e in oom] == [("cuda_oom", "nccl", "out of memory")]
    # NVIDIA/TensorRT-LLM#1670
    other = _mine("VM-0-16-ubuntu:392:494 [2] enqueue.cc:54 NCCL WARN Cuda failure 'invalid resource handle'\n")
    assert [(e.error, e.fields["cuda_error"]) for e in other] == [("nccl_error", "invalid resource handle")]


# torch/distributed/distributed_c10d.py _store_based_barrier's progress line, logged every 10 s while waiting
_WAIT_1401 = ("05/10/2023 23:07:45 - INFO - torch.distributed.distributed_c10d - Waiting in store based barrier to "
              "initialize process group for rank: 0, key: store_based_barrier_key:2 (world_size=8, worker_count=1, "
              "timeout=0:30:00)\n")  # huggingface/accelerate#1401 (2607.log)


def test_store_barrier_wait_is_an_error_only_from_the_third_round_of_one_rank():
    assert [e for e in _mine(_WAIT_1401 * 2) if e.kind == "error"] == []
    evs = [e for e in _mine(_WAIT_1401 * 5) if e.kind == "error"]
    assert [(e.error, e.fields["phase"], e.fields["joined"], e.fields["world_size"], e.fields["rounds"]) for e in evs] == [
        ("collective_timeout", "process group creation", 1, 8, 3)]


def test_store_barrier_wait_with_more_workers_than_the_world_fails_at_once():
    # ultralytics/yolov5#4574 (2608.log): 8 processes on one store for a world of 4
    line = ("Waiting in store based barrier to initialize process group for rank: 0, key: store_based_barrier_key:1 "
            "(world_size=4, worker_count=8, timeout=0:30:00)\n")
    evs = [e for e in _mine(line) if e.kind == "error"]
    assert [(e.fields["joined"], e.fields["world_size"], e.fields["reason"]) for e in evs] == [
        (8, 4, "8 processes joined a group of 4")]


def test_store_barrier_wait_torch2_wording(tmp_path):
    # [SRC] torch 2.0+ distributed_c10d.py logger.info("... (world_size=%s, num_workers_joined=%s, timeout=%s)") rendered
    line = ("INFO:torch.distributed.distributed_c10d:Waiting in store based barrier to initialize process group for rank: 3, "
            "key: store_based_barrier_key:1 (world_size=4, num_workers_joined=5, timeout=0:30:00)\n")
    from nanscope import api
    p = tmp_path / "x.log"
    p.write_text(line, encoding="utf-8")
    assert [f.id for f in api.diagnose([str(p)]).findings] == ["rendezvous-timeout"]


# NVIDIA/nccl src/transport/nvls.cc: CUCHECK of the multicast set-up (NVIDIA/nccl#1788, 2620.log; #1029, 2626.log)
# and 2.27+'s own message, wrapped by the paste (aarora79/agentic-coding-harness-benchmarks#173, 2624.log)
@pytest.mark.parametrize("line,code,msg", [
    ("[2025-07-21 19:05:29] node004:27907:27907 [1] transport/nvls.cc:254 NCCL WARN Cuda failure 401 'the operation cannot be performed in the present state'",
     401, "the operation cannot be performed in the present state"),
    ("rdma-test-gpu-worker-1: rdma-test-gpu-worker-1:2918:4483 [4] transport/nvls.cc:245 NCCL WARN Cuda failure 'initialization error'",
     None, "initialization error"),
    ("transport/nvls.cc:287 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory", None, None),
    ("Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation cannot be performed in the present state'. ",
     401, "the operation cannot be performed in the present state"),
], ids=["cucheck", "cucheck-2.18", "bind-wrapped", "bind-last-error"])
def test_nvls_failures_are_their_own_error(line, code, msg):
    evs = [e for e in _mine(line + "\n") if e.kind == "error"]
    assert [(e.error, e.fields["cuda_code"], e.fields["cuda_error"]) for e in evs] == [("nccl_nvls_failed", code, msg)]


def test_nvls_info_line_is_no_error():
    # NVIDIA/nccl#1029: NCCL only reports that it will not use NVLS
    assert [e for e in _mine("rdma-test-gpu-worker-0: rdma-test-gpu-worker-0:4280:5850 [5] NCCL INFO NVLS multicast support "
                             "is not available on dev 5\n") if e.kind == "error"] == []


# NVIDIA/nccl's SHM transport: a full /dev/shm (a container's 64 MB) is shm_exhausted; a segment it may not open is not
@pytest.mark.parametrize("text", [
    # NVIDIA/nccl#342 (2630.log): 2.7's include/shm.h, no space before the colon
    "include/shm.h:28 NCCL WARN Call to posix_fallocate failed: No space left on device\n",
    # NVIDIA/nccl-tests#166 (983.log): 2.12+ misc/shmutils.cc
    "ubuntu:9621:9691 [6] misc/shmutils.cc:71 NCCL WARN Error: failed to extend /dev/shm/nccl-fjwOOB to 5967876 bytes\n"
    "ubuntu:9621:9691 [6] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-fjwOOB (size 5967872)\n",
], ids=["posix_fallocate", "shmutils"])
def test_nccl_shm_segment_in_a_full_dev_shm_is_shm_exhausted(text):
    evs = [e for e in _mine(text) if e.kind == "error"]
    assert [(e.error, e.fields["source"]) for e in evs] == [("shm_exhausted", "nccl")]


def test_nccl_shm_segment_that_cannot_be_opened_stays_an_nccl_error():
    # NVIDIA/nccl#328: shm_open refused (permissions), then the segment error
    evs = [e for e in _mine("node08:27106:27302 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission denied\n"
                            "node08:27106:27302 [0] NCCL INFO include/shm.h:41 -> 2\n"
                            "node08:27106:27302 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment "
                            "nccl-shm-recv-b7948f403864987a-0-3-0 (size 4460544)\n") if e.kind == "error"]
    assert {e.error for e in evs} == {"nccl_error"}
