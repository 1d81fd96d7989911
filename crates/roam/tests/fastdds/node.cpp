// roam_fastdds_node: small ROS 2-shaped nodes on Fast DDS 2.9 (Debian's libfastrtps), the peers
// of roam's Fast DDS tests. What a node on rmw_fastrtps puts on the wire, without ROS 2:
// topics `rt/<name>`, types `<pkg>::msg::dds_::<Name>_`, ROS 2 default QoS (reliable, volatile,
// keep last 10), services as rmw_fastrtps does them (`rq/<name>Request` / `rr/<name>Reply`, the
// request identity beside the payload as the sample identity / related sample identity).
//
// Fast DDS stays on loopback: no built-in transports (so no shared memory), one UDPv4 transport
// whitelisted to 127.0.0.1, unicast locators 127.0.0.1 with well-known ports, no multicast, and
// SPDP by unicast to 127.0.0.1 at the ports of participant ids 0..N (the initial peers), where
// CycloneDDS participants with `ParticipantIndex auto` listen.
//
// usage: roam_fastdds_node MODE [options]
//   talk     publish: "TEXT n" (string), pattern blobs (blob) or fleet updates (keyed)
//   listen   print one line per sample received
//   server   AddTwoInts server: answers every request with a + b
//   client   AddTwoInts client: N calls, prints each answer that is its own
//   action-server  example_interfaces/action/Fibonacci server (action.cpp)
//   action-client  Fibonacci client: one goal, its feedback, status and result (action.cpp)
// options:
//   --domain D          DDS domain (0)
//   --topic NAME        DDS topic (rt/chatter; keyed: fleet_state)
//   --service NAME      service name for server/client (add_two_ints)
//   --type T            string | blob | keyed (string)
//   --text TEXT         string talker's prefix (fast)
//   --transient-local   durability transient-local instead of volatile
//   --depth N           history depth (10; keyed: 1)
//   --count N           talk: publish N samples then print "done" and stay (0: forever)
//   --rate HZ           talk: samples per second (20)
//   --size BYTES        talk: string padding / blob payload size (0)
//   --wait-match N      talk: wait for N matched readers before publishing (0)
//   --start-when FILE   talk: then also wait until FILE exists
//   --keys K --updates M  keyed talk: M updates of K instances, then "written"
//   --summary           listen (string): "len: N fnv: HEX" instead of the text
//   --calls N --a A --b B --timeout S   client: N calls (a+i, b), S seconds per call (10)
//   --legacy            client: do not put the reply reader's GUID in the request
//   --name NAME         action name (/fibonacci)
//   --step-ms N         action-server: milliseconds per Fibonacci number (100)
//   --order N           action-client: the goal's order (10)
//   --cancel-after K    action-client: cancel the goal after K feedback messages
//   --timeout S         action-client: seconds before a call is sent again (10)
// Lines on stdout: "ready" once the entities exist, then the samples; diagnostics on stderr.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastdds/rtps/common/WriteParams.h>
#include <fastdds/rtps/flowcontrol/FlowControllerDescriptor.hpp>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastrtps/utils/IPLocator.h>

#include "RoamTypes.h"
#include "RoamTypesPubSubTypes.h"
#include "node.hpp"

using eprosima::fastrtps::rtps::GUID_t;
using eprosima::fastrtps::rtps::iHandle2GUID;
using eprosima::fastrtps::rtps::IPLocator;
using eprosima::fastrtps::rtps::Locator_t;
using eprosima::fastrtps::rtps::SampleIdentity;
using eprosima::fastrtps::rtps::SequenceNumber_t;
using eprosima::fastrtps::rtps::WriteParams;

namespace roam_node {

std::atomic<bool> g_stop{false};
std::mutex g_out;

void out(const std::string& line)
{
    std::lock_guard<std::mutex> g(g_out);
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

void err(const std::string& line)
{
    std::lock_guard<std::mutex> g(g_out);
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
}

[[noreturn]] void usage(const char* why)
{
    std::fprintf(stderr, "roam_fastdds_node: %s (see the head of node.cpp for usage)\n", why);
    std::exit(2);
}

Args parse(int argc, char** argv)
{
    Args a;
    if (argc < 2)
    {
        usage("no mode");
    }
    a.mode = argv[1];
    for (int i = 2; i < argc; ++i)
    {
        std::string k = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc)
            {
                usage(("missing value for " + k).c_str());
            }
            return argv[++i];
        };
        if (k == "--domain") a.domain = std::stoi(val());
        else if (k == "--topic") a.topic = val();
        else if (k == "--service") a.service = val();
        else if (k == "--type") a.type = val();
        else if (k == "--text") a.text = val();
        else if (k == "--transient-local") a.transient_local = true;
        else if (k == "--depth") a.depth = std::stoi(val());
        else if (k == "--count") a.count = std::stol(val());
        else if (k == "--rate") a.rate = std::stod(val());
        else if (k == "--size") a.size = std::stoul(val());
        else if (k == "--wait-match") a.wait_match = std::stoi(val());
        else if (k == "--keys") a.keys = std::stoi(val());
        else if (k == "--updates") a.updates = std::stoi(val());
        else if (k == "--summary") a.summary = true;
        else if (k == "--calls") a.calls = std::stol(val());
        else if (k == "--a") a.a = std::stoll(val());
        else if (k == "--b") a.b = std::stoll(val());
        else if (k == "--timeout") a.timeout = std::stod(val());
        else if (k == "--legacy") a.legacy = true;
        else if (k == "--start-when") a.start_when = val();
        else if (k == "--name") a.name = val();
        else if (k == "--step-ms") a.step_ms = std::stol(val());
        else if (k == "--order") a.order = std::stol(val());
        else if (k == "--cancel-after") a.cancel_after = std::stol(val());
        else usage(("unknown option " + k).c_str());
    }
    if (a.topic.empty())
    {
        a.topic = a.type == "keyed" ? "fleet_state" : "rt/chatter";
    }
    if (a.depth < 0)
    {
        a.depth = a.type == "keyed" ? 1 : 10;
    }
    return a;
}

DomainParticipant* loopback_participant(int domain, const std::string& name)
{
    DomainParticipantQos pqos = PARTICIPANT_QOS_DEFAULT;
    pqos.name(name);
    pqos.transport().use_builtin_transports = false;
    auto udp = std::make_shared<eprosima::fastdds::rtps::UDPv4TransportDescriptor>();
    udp->interfaceWhiteList.push_back("127.0.0.1");
    // Initial peers without a port expand to the SPDP ports of participant ids 0..range-1 on
    // 127.0.0.1; CycloneDDS with ParticipantIndex auto takes the lowest free index.
    udp->maxInitialPeersRange = 32;
    // Big messages arrive as bursts of 64 KB datagrams: room for them in the socket buffers
    // (the kernel caps this at net.core.rmem_max/wmem_max).
    udp->receiveBufferSize = 4 * 1024 * 1024;
    udp->sendBufferSize = 4 * 1024 * 1024;
    pqos.transport().user_transports.push_back(udp);

    Locator_t lo;
    lo.kind = LOCATOR_KIND_UDPv4;
    IPLocator::setIPv4(lo, 127, 0, 0, 1);
    lo.port = 0; // 0: Fast DDS uses the well-known ports of this participant's id
    auto& wire = pqos.wire_protocol();
    wire.builtin.metatrafficUnicastLocatorList.push_back(lo);
    wire.default_unicast_locator_list.push_back(lo);
    wire.builtin.initialPeersList.push_back(lo);
    // Only unicast locators are set, so no multicast locator is added either.
    wire.builtin.avoid_builtin_multicast = true;

    // Pace writers (1 MB every 5 ms, ~200 MB/s) so a 20 MB sample's fragments do not overflow
    // the readers' socket buffers on loopback.
    auto fc = std::make_shared<eprosima::fastdds::rtps::FlowControllerDescriptor>();
    fc->name = "roam_test_pace";
    fc->max_bytes_per_period = 1024 * 1024;
    fc->period_ms = 5;
    pqos.flow_controllers().push_back(fc);

    DomainParticipant* p = DomainParticipantFactory::get_instance()->create_participant(
        static_cast<DomainId_t>(domain), pqos);
    if (p == nullptr)
    {
        err("cannot create the participant");
        std::exit(1);
    }
    return p;
}

DataWriterQos writer_qos(const Args& a)
{
    DataWriterQos q = DATAWRITER_QOS_DEFAULT;
    q.reliability().kind = RELIABLE_RELIABILITY_QOS;
    q.durability().kind = a.transient_local ? TRANSIENT_LOCAL_DURABILITY_QOS : VOLATILE_DURABILITY_QOS;
    q.history().kind = KEEP_LAST_HISTORY_QOS;
    q.history().depth = a.depth;
    // rmw_fastrtps's defaults: asynchronous publication, payloads that grow as needed.
    q.publish_mode().kind = ASYNCHRONOUS_PUBLISH_MODE;
    q.publish_mode().flow_controller_name = "roam_test_pace";
    q.endpoint().history_memory_policy =
        eprosima::fastrtps::rtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE;
    q.reliable_writer_qos().times.heartbeatPeriod = eprosima::fastrtps::Duration_t(0, 100000000);
    q.data_sharing().off();
    return q;
}

DataReaderQos reader_qos(const Args& a)
{
    DataReaderQos q = DATAREADER_QOS_DEFAULT;
    q.reliability().kind = RELIABLE_RELIABILITY_QOS;
    q.durability().kind = a.transient_local ? TRANSIENT_LOCAL_DURABILITY_QOS : VOLATILE_DURABILITY_QOS;
    q.history().kind = KEEP_LAST_HISTORY_QOS;
    q.history().depth = a.depth;
    q.endpoint().history_memory_policy =
        eprosima::fastrtps::rtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE;
    q.data_sharing().off();
    return q;
}

std::string to_string(const GUID_t& g)
{
    std::ostringstream s;
    s << g;
    return s.str();
}

std::string to_string(const SampleIdentity& id)
{
    std::ostringstream s;
    s << id.writer_guid() << "#" << id.sequence_number().to64long();
    return s.str();
}

SampleIdentity reply_identity(const SampleInfo& info)
{
    SampleIdentity related = info.sample_identity;
    if (info.related_sample_identity.writer_guid() != GUID_t::unknown())
    {
        related.writer_guid(info.related_sample_identity.writer_guid());
    }
    return related;
}

/// FNV-1a 64: a digest the tests can recompute without a crypto library here.
uint64_t fnv1a(const uint8_t* p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; ++i)
    {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

std::string hex64(uint64_t v)
{
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

/// Byte i of blob `seq`: a pattern a listener can check without being told it.
inline uint8_t blob_byte(uint32_t seq, size_t i)
{
    return static_cast<uint8_t>((seq * 31u + i * 7u + (i >> 16)) % 251u);
}

void sleep_until_stopped()
{
    while (!g_stop.load())
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

Topic* make_topic(DomainParticipant* p, const std::string& name, TopicDataType* t)
{
    TypeSupport ts(t);
    ts.register_type(p);
    Topic* topic = p->create_topic(name, ts.get_type_name(), TOPIC_QOS_DEFAULT);
    if (topic == nullptr)
    {
        err("cannot create topic " + name);
        std::exit(1);
    }
    return topic;
}

// ---------------------------------------------------------------------------------------------
// talk

int talk(const Args& a)
{
    WriterLog log; // outlives the entities (declared first, destroyed last)
    Entities e;
    e.participant = loopback_participant(a.domain, "roam_fastdds_talker");
    TopicDataType* t = nullptr;
    if (a.type == "string") t = new std_msgs::msg::dds_::String_PubSubType();
    else if (a.type == "blob") t = new roam_test::msg::dds_::Blob_PubSubType();
    else if (a.type == "keyed") t = new roam_test::RobotStatePubSubType();
    else usage("unknown --type");
    Topic* topic = make_topic(e.participant, a.topic, t);
    e.publisher = e.participant->create_publisher(PUBLISHER_QOS_DEFAULT);
    DataWriter* w = e.publisher->create_datawriter(topic, writer_qos(a), &log);
    if (w == nullptr)
    {
        err("cannot create the writer");
        return 1;
    }
    out("ready");
    while (log.matched.load() < a.wait_match && !g_stop.load())
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    while (!a.start_when.empty() && !g_stop.load())
    {
        if (FILE* f = std::fopen(a.start_when.c_str(), "r"))
        {
            std::fclose(f);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }

    if (a.type == "keyed")
    {
        for (int u = 0; u < a.updates; ++u)
        {
            for (int k = 0; k < a.keys; ++k)
            {
                roam_test::RobotState s;
                s.fleet("f" + std::to_string(k % 2));
                s.robot(static_cast<uint32_t>(k));
                s.update(static_cast<uint32_t>(u));
                s.note("robot " + std::to_string(k) + " update " + std::to_string(u));
                w->write(&s);
            }
        }
        out("written");
        sleep_until_stopped();
        return 0;
    }

    const auto period = std::chrono::duration<double>(a.rate > 0 ? 1.0 / a.rate : 0.0);
    auto next = std::chrono::steady_clock::now();
    for (long n = 0; (a.count == 0 || n < a.count) && !g_stop.load(); ++n)
    {
        if (a.type == "string")
        {
            std_msgs::msg::dds_::String_ s;
            std::string text = a.text + " " + std::to_string(n);
            text.append(a.size, 'x');
            s.data(std::move(text));
            w->write(&s);
        }
        else
        {
            roam_test::msg::dds_::Blob_ s;
            s.seq(static_cast<uint32_t>(n));
            s.data().resize(a.size);
            for (size_t i = 0; i < a.size; ++i)
            {
                s.data()[i] = blob_byte(static_cast<uint32_t>(n), i);
            }
            w->write(&s);
        }
        err("sent " + std::to_string(n));
        next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
        std::this_thread::sleep_until(next);
    }
    out("done");
    // Stay: a transient-local writer serves late joiners only while it exists.
    sleep_until_stopped();
    return 0;
}

// ---------------------------------------------------------------------------------------------
// listen

struct Listener : public DataReaderListener
{
    Args args;
    // Keyed: the key of each instance seen, for the lines of its state changes.
    std::map<InstanceHandle_t, std::string> keys;

    void on_subscription_matched(DataReader*, const SubscriptionMatchedStatus& s) override
    {
        err("reader matched " + std::to_string(s.current_count));
    }

    void on_data_available(DataReader* r) override
    {
        SampleInfo info;
        if (args.type == "string")
        {
            std_msgs::msg::dds_::String_ s;
            while (r->take_next_sample(&s, &info) == ReturnCode_t::RETCODE_OK)
            {
                if (!info.valid_data)
                {
                    continue;
                }
                if (args.summary)
                {
                    const auto& d = s.data();
                    out("len: " + std::to_string(d.size()) + " fnv: " +
                        hex64(fnv1a(reinterpret_cast<const uint8_t*>(d.data()), d.size())));
                }
                else
                {
                    out("data: " + s.data());
                }
            }
        }
        else if (args.type == "blob")
        {
            roam_test::msg::dds_::Blob_ s;
            while (r->take_next_sample(&s, &info) == ReturnCode_t::RETCODE_OK)
            {
                if (!info.valid_data)
                {
                    continue;
                }
                const auto& d = s.data();
                bool ok = true;
                for (size_t i = 0; i < d.size() && ok; ++i)
                {
                    ok = d[i] == blob_byte(s.seq(), i);
                }
                out("blob seq=" + std::to_string(s.seq()) + " len=" + std::to_string(d.size()) +
                    " intact=" + (ok ? "yes" : "no"));
            }
        }
        else
        {
            roam_test::RobotState s;
            while (r->take_next_sample(&s, &info) == ReturnCode_t::RETCODE_OK)
            {
                if (info.valid_data)
                {
                    std::string key = "fleet=" + s.fleet() + " robot=" + std::to_string(s.robot());
                    keys[info.instance_handle] = key;
                    out("data " + key + " update=" + std::to_string(s.update()));
                }
                std::string key = keys.count(info.instance_handle) ? keys[info.instance_handle]
                                                                    : std::string("(unknown)");
                if (info.instance_state == NOT_ALIVE_DISPOSED_INSTANCE_STATE)
                {
                    out("disposed " + key);
                }
                else if (info.instance_state == NOT_ALIVE_NO_WRITERS_INSTANCE_STATE)
                {
                    out("unregistered " + key);
                }
            }
        }
    }
};

int listen(const Args& a)
{
    Listener l; // outlives the entities
    Entities e;
    e.participant = loopback_participant(a.domain, "roam_fastdds_listener");
    TopicDataType* t = nullptr;
    if (a.type == "string") t = new std_msgs::msg::dds_::String_PubSubType();
    else if (a.type == "blob") t = new roam_test::msg::dds_::Blob_PubSubType();
    else if (a.type == "keyed") t = new roam_test::RobotStatePubSubType();
    else usage("unknown --type");
    Topic* topic = make_topic(e.participant, a.topic, t);
    e.subscriber = e.participant->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
    l.args = a;
    DataReader* r = e.subscriber->create_datareader(topic, reader_qos(a), &l);
    if (r == nullptr)
    {
        err("cannot create the reader");
        return 1;
    }
    out("ready");
    sleep_until_stopped();
    return 0;
}

// ---------------------------------------------------------------------------------------------
// services, as rmw_fastrtps does them

using Request = example_interfaces::srv::dds_::AddTwoInts_Request_;
using Response = example_interfaces::srv::dds_::AddTwoInts_Response_;

/// The server's reply writer: which readers it has matched, so a reply can wait for its
/// client's reader (as rmw_fastrtps's rmw_send_response does): a client sees the service as
/// available once *its* endpoints matched the server's, which may be before the server's
/// reply writer matched the client's reply reader, and a volatile reply written then is lost.
struct ReplyWriterLog : public DataWriterListener
{
    std::mutex m;
    std::condition_variable changed;
    std::set<GUID_t> readers;

    void on_publication_matched(DataWriter*, const PublicationMatchedStatus& s) override
    {
        {
            std::lock_guard<std::mutex> lock(m);
            GUID_t g = iHandle2GUID(s.last_subscription_handle);
            if (s.current_count_change > 0) readers.insert(g);
            else if (s.current_count_change < 0) readers.erase(g);
        }
        changed.notify_all();
        err("writer matched " + std::to_string(s.current_count));
    }

    /// Waits up to `limit` until `reader` is matched; true if it is.
    bool wait_for(const GUID_t& reader, std::chrono::milliseconds limit)
    {
        std::unique_lock<std::mutex> lock(m);
        return changed.wait_for(lock, limit, [&] { return readers.count(reader) > 0; });
    }
};

struct ServerListener : public DataReaderListener
{
    DataWriter* replies = nullptr;
    ReplyWriterLog* reply_log = nullptr;

    void on_subscription_matched(DataReader*, const SubscriptionMatchedStatus& s) override
    {
        err("request reader matched " + std::to_string(s.current_count));
    }

    void on_data_available(DataReader* r) override
    {
        Request req;
        SampleInfo info;
        while (r->take_next_sample(&req, &info) == ReturnCode_t::RETCODE_OK)
        {
            if (!info.valid_data)
            {
                continue;
            }
            // The request's identity: its writer and sequence number. rmw_fastrtps clients
            // (Humble on) put their reply reader's GUID in the request's related sample
            // identity; the reply then names that reader, with the request's sequence number.
            Response resp;
            resp.sum(req.a() + req.b());
            WriteParams wp;
            wp.related_sample_identity(reply_identity(info));
            GUID_t client_reader = info.related_sample_identity.writer_guid();
            if (client_reader != GUID_t::unknown() &&
                    !reply_log->wait_for(client_reader, std::chrono::milliseconds(1000)))
            {
                err("the client's reply reader is not matched yet; replying anyway");
            }
            bool ok = replies->write(&resp, wp);
            out("request a=" + std::to_string(req.a()) + " b=" + std::to_string(req.b()) +
                " sum=" + std::to_string(resp.sum()) + " id=" + to_string(info.sample_identity) +
                (ok ? "" : " (reply not written)"));
        }
    }
};

int server(const Args& a)
{
    ReplyWriterLog wlog; // the listeners outlive the entities
    ServerListener l;
    l.reply_log = &wlog;
    Entities e;
    e.participant = loopback_participant(a.domain, "roam_fastdds_server");
    Topic* rq = make_topic(e.participant, "rq/" + a.service + "Request",
            new example_interfaces::srv::dds_::AddTwoInts_Request_PubSubType());
    Topic* rr = make_topic(e.participant, "rr/" + a.service + "Reply",
            new example_interfaces::srv::dds_::AddTwoInts_Response_PubSubType());
    e.publisher = e.participant->create_publisher(PUBLISHER_QOS_DEFAULT);
    e.subscriber = e.participant->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
    Args q = a;
    q.transient_local = false;
    q.depth = 10;
    l.replies = e.publisher->create_datawriter(rr, writer_qos(q), &wlog);
    DataReader* r = e.subscriber->create_datareader(rq, reader_qos(q), &l);
    if (l.replies == nullptr || r == nullptr)
    {
        err("cannot create the server's endpoints");
        return 1;
    }
    out("ready");
    sleep_until_stopped();
    return 0;
}

struct ClientListener : public DataReaderListener
{
    std::mutex m;
    // Requests sent and not answered yet: sequence number -> (a, b).
    std::map<int64_t, std::pair<long long, long long>> pending;
    GUID_t writer_guid;
    GUID_t reader_guid;
    std::atomic<long> answered{0};
    std::atomic<long> foreign{0};

    void on_subscription_matched(DataReader*, const SubscriptionMatchedStatus& s) override
    {
        err("reply reader matched " + std::to_string(s.current_count));
    }

    void on_data_available(DataReader* r) override
    {
        Response resp;
        SampleInfo info;
        while (r->take_next_sample(&resp, &info) == ReturnCode_t::RETCODE_OK)
        {
            if (!info.valid_data)
            {
                continue;
            }
            const SampleIdentity& rel = info.related_sample_identity;
            const GUID_t& g = rel.writer_guid();
            int64_t seq = rel.sequence_number().to64long();
            std::lock_guard<std::mutex> lock(m);
            auto it = pending.find(seq);
            // As rmw_fastrtps: a reply is ours when it names our reply reader or our request
            // writer, and one of our outstanding requests.
            if ((g == reader_guid || g == writer_guid) && it != pending.end())
            {
                out("answer a=" + std::to_string(it->second.first) + " b=" +
                    std::to_string(it->second.second) + " sum=" + std::to_string(resp.sum()));
                pending.erase(it);
                ++answered;
            }
            else
            {
                ++foreign;
                err("ignored a reply (sum=" + std::to_string(resp.sum()) + ") for " +
                    to_string(rel) + ": not one of this client's requests");
            }
        }
    }
};

int client(const Args& a)
{
    WriterLog wlog; // the listeners outlive the entities
    ClientListener l;
    Entities e;
    e.participant = loopback_participant(a.domain, "roam_fastdds_client");
    Topic* rq = make_topic(e.participant, "rq/" + a.service + "Request",
            new example_interfaces::srv::dds_::AddTwoInts_Request_PubSubType());
    Topic* rr = make_topic(e.participant, "rr/" + a.service + "Reply",
            new example_interfaces::srv::dds_::AddTwoInts_Response_PubSubType());
    e.publisher = e.participant->create_publisher(PUBLISHER_QOS_DEFAULT);
    e.subscriber = e.participant->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
    Args q = a;
    q.transient_local = false;
    q.depth = 10;
    DataWriter* w = e.publisher->create_datawriter(rq, writer_qos(q), &wlog);
    DataReader* r = e.subscriber->create_datareader(rr, reader_qos(q), &l);
    if (w == nullptr || r == nullptr)
    {
        err("cannot create the client's endpoints");
        return 1;
    }
    l.writer_guid = w->guid();
    l.reader_guid = r->guid();
    out("ready");
    // Like rclcpp's wait_for_service: a server is there when both its endpoints matched ours.
    while (!g_stop.load())
    {
        PublicationMatchedStatus ps;
        SubscriptionMatchedStatus ss;
        w->get_publication_matched_status(ps);
        r->get_subscription_matched_status(ss);
        if (ps.current_count > 0 && ss.current_count > 0)
        {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    out("service available");
    for (long i = 0; i < a.calls && !g_stop.load(); ++i)
    {
        Request req;
        req.a(a.a + i);
        req.b(a.b);
        WriteParams wp;
        if (!a.legacy)
        {
            wp.related_sample_identity().writer_guid(l.reader_guid);
        }
        long before = l.answered.load();
        {
            // Held across the write so a fast reply finds its request pending.
            std::lock_guard<std::mutex> lock(l.m);
            if (!w->write(&req, wp))
            {
                err("request not written");
                continue;
            }
            int64_t seq = wp.sample_identity().sequence_number().to64long();
            l.pending[seq] = {req.a(), req.b()};
            err("request a=" + std::to_string(req.a()) + " sent as " +
                to_string(wp.sample_identity()));
        }
        auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(a.timeout);
        while (l.answered.load() == before && std::chrono::steady_clock::now() < end &&
                !g_stop.load())
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        if (l.answered.load() == before)
        {
            out("timeout a=" + std::to_string(req.a()) + " b=" + std::to_string(req.b()));
        }
    }
    out("done answered=" + std::to_string(l.answered.load()) + " of " + std::to_string(a.calls) +
        " ignored=" + std::to_string(l.foreign.load()));
    return 0;
}

} // namespace roam_node

int main(int argc, char** argv)
{
    using namespace roam_node;
    std::signal(SIGTERM, [](int) { g_stop = true; });
    std::signal(SIGINT, [](int) { g_stop = true; });
    Args a = parse(argc, argv);
    if (a.mode == "talk") return talk(a);
    if (a.mode == "listen") return listen(a);
    if (a.mode == "server") return server(a);
    if (a.mode == "client") return client(a);
    if (a.mode == "action-server") return action_server(a);
    if (a.mode == "action-client") return action_client(a);
    usage("unknown mode");
}
