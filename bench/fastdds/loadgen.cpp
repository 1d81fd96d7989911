// roam-loadgen-fastdds: the lab's load generator on Fast DDS 2.9 (Debian's libfastrtps), a
// drop-in for roam-loadgen (bench/src/loadgen/) in E1 and E2: same command line (the options the
// lab passes), same DDS topics (`rt/<topic>`, echo on `rt/<topic>/echo`), same ROS 2 type names
// (std_msgs::msg::dds_::String_, sensor_msgs::msg::dds_::CompressedImage_), same QoS (reliable
// or best effort, volatile, keep last N or keep all), same payload layout (bench/src/ros_msgs.rs:
// a String's text starts "<seq> <unix ns> ", an image carries the send time in header.stamp and
// the sequence number as the decimal header.frame_id), same warm-up and echo behaviour, and the
// same JSON report fields. What a node on rmw_fastrtps would be, without ROS 2; it is not
// announced in ros_discovery_info (roam's proxies do not need it).
//
// Fast DDS stays on loopback as the repository's Fast DDS test nodes do: no built-in transports
// (so no shared memory and no data sharing), one UDPv4 transport whitelisted to 127.0.0.1,
// unicast locators only, SPDP to 127.0.0.1 at the ports of participant ids 0..31 (where
// CycloneDDS participants with `ParticipantIndex auto` listen, so both discover each other).
// Writers publish synchronously (Fast DDS's default, rmw_fastrtps's since Iron).
//
// usage: roam-loadgen-fastdds source|sink [--domain N] [--topic NAME] [--type string|
//        compressed_image] [--size N] [--count N] [--rate HZ] [--echo] [--best-effort]
//        [--depth N] [--keep-all] [--path-timeout-ms N] [--echo-timeout-ms N] [--linger-ms N]
//        [--idle-ms N] [--ros-distro NAME (ignored)]
// Lines on stdout: the sink prints "ready" once its entities exist; source and measuring sink
// print one JSON report line (starting with '{'). Diagnostics on stderr.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/DataWriterListener.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/DataReaderListener.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastrtps/utils/IPLocator.h>

#include "LoadgenTypes.h"
#include "LoadgenTypesPubSubTypes.h"

using namespace eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::IPLocator;
using eprosima::fastrtps::rtps::Locator_t;
using Clock = std::chrono::steady_clock;

namespace {

/// Sequence numbers with this bit are warm-up messages, never counted.
constexpr uint64_t WARMUP = uint64_t(1) << 62;
constexpr uint64_t NO_SEQ = UINT64_MAX;

std::atomic<bool> g_stop{false};
const auto g_started = std::chrono::steady_clock::now();

/// A diagnostic on stderr, stamped with the milliseconds since the program started.
void note(const std::string& what)
{
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - g_started)
                  .count();
    std::fprintf(stderr, "%lld ms: %s\n", static_cast<long long>(ms), what.c_str());
}

void on_signal(int)
{
    g_stop = true;
}

[[noreturn]] void fail(const std::string& why, int code = 1)
{
    std::fprintf(stderr, "roam-loadgen-fastdds: %s\n", why.c_str());
    std::exit(code);
}

struct Args
{
    bool source = true;
    int domain = 0;
    std::string topic = "/roam_lab/data";
    std::string kind = "string";
    size_t size = 1000;
    uint64_t count = 1000;
    double rate = 0;
    bool echo = false;
    bool best_effort = false;
    int depth = 10;
    bool keep_all = false;
    double path_timeout_ms = 60000;
    double echo_timeout_ms = 2000;
    double linger_ms = 1000;
    double idle_ms = 3000;
};

Args parse(int argc, char** argv)
{
    Args a;
    if (argc < 2)
    {
        fail("a role is needed: source or sink", 2);
    }
    std::string role = argv[1];
    if (role == "source") a.source = true;
    else if (role == "sink") a.source = false;
    else fail("unknown role " + role + " (source or sink)", 2);
    for (int i = 2; i < argc; ++i)
    {
        std::string k = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc)
            {
                fail(k + " needs a value", 2);
            }
            return argv[++i];
        };
        try
        {
            if (k == "--domain") a.domain = std::stoi(val());
            else if (k == "--topic") a.topic = val();
            else if (k == "--type") a.kind = val();
            else if (k == "--size") a.size = std::stoul(val());
            else if (k == "--count") a.count = std::stoull(val());
            else if (k == "--rate") a.rate = std::stod(val());
            else if (k == "--echo") a.echo = true;
            else if (k == "--best-effort") a.best_effort = true;
            else if (k == "--depth") a.depth = std::max(1, std::stoi(val()));
            else if (k == "--keep-all") a.keep_all = true;
            else if (k == "--path-timeout-ms") a.path_timeout_ms = std::stod(val());
            else if (k == "--echo-timeout-ms") a.echo_timeout_ms = std::stod(val());
            else if (k == "--linger-ms") a.linger_ms = std::stod(val());
            else if (k == "--idle-ms") a.idle_ms = std::stod(val());
            else if (k == "--ros-distro") (void)val();
            else fail("unknown option " + k, 2);
        }
        catch (const std::logic_error&)
        {
            fail("bad value for " + k, 2);
        }
    }
    if (a.topic.empty() || a.topic[0] != '/')
    {
        fail("--topic " + a.topic + ": a ROS 2 topic starts with /", 2);
    }
    if (a.kind != "string" && a.kind != "compressed_image")
    {
        fail("--type " + a.kind + ": this load generator speaks string and compressed_image", 2);
    }
    if (a.count > 50000000)
    {
        fail("--count: at most 50,000,000", 2);
    }
    return a;
}

uint64_t now_ns()
{
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
}

double us_since(Clock::time_point from, Clock::time_point to)
{
    return std::chrono::duration<double, std::micro>(to - from).count();
}

// ---- the two message types: encode, read the stamp back, serialized size ---------------------

using StringMsg = std_msgs::msg::dds_::String_;
using ImageMsg = sensor_msgs::msg::dds_::CompressedImage_;

bool parse_u64(const char* p, size_t n, uint64_t& out)
{
    if (n == 0 || n > 20)
    {
        return false;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i)
    {
        if (p[i] < '0' || p[i] > '9')
        {
            return false;
        }
        v = v * 10 + static_cast<uint64_t>(p[i] - '0');
    }
    out = v;
    return true;
}

struct StringKind
{
    using Msg = StringMsg;
    using PubSub = std_msgs::msg::dds_::String_PubSubType;
    static constexpr const char* name = "string";

    static void encode(Msg& m, size_t size, uint64_t seq, uint64_t sent_ns)
    {
        std::string text = std::to_string(seq) + " " + std::to_string(sent_ns) + " ";
        if (text.size() < size)
        {
            text.append(size - text.size(), 'x');
        }
        m.data(std::move(text));
    }
    /// The sequence number and send time, or false when the text is not ours.
    static bool stamp(const Msg& m, uint64_t& seq, uint64_t& sent_ns)
    {
        const std::string& d = m.data();
        size_t a = d.find(' ');
        if (a == std::string::npos || a > 48)
        {
            return false;
        }
        size_t b = d.find(' ', a + 1);
        if (b == std::string::npos)
        {
            b = d.size();
        }
        return parse_u64(d.data(), a, seq) && parse_u64(d.data() + a + 1, b - a - 1, sent_ns);
    }
    /// Bytes of the serialized sample with its encapsulation header (what roam-loadgen counts).
    static size_t wire_bytes(const Msg& m)
    {
        return 4 + 4 + m.data().size() + 1;
    }
};

size_t align4(size_t n)
{
    return (n + 3) & ~size_t(3);
}

struct ImageKind
{
    using Msg = ImageMsg;
    using PubSub = sensor_msgs::msg::dds_::CompressedImage_PubSubType;
    static constexpr const char* name = "compressed_image";

    static void encode(Msg& m, size_t size, uint64_t seq, uint64_t sent_ns)
    {
        m.header().stamp().sec(static_cast<int32_t>(static_cast<uint32_t>(sent_ns / 1000000000ULL)));
        m.header().stamp().nanosec(static_cast<uint32_t>(sent_ns % 1000000000ULL));
        m.header().frame_id(std::to_string(seq));
        m.format("jpeg");
        m.data().assign(size, 0xd8);
    }
    static bool stamp(const Msg& m, uint64_t& seq, uint64_t& sent_ns)
    {
        const std::string& id = m.header().frame_id();
        if (!parse_u64(id.data(), id.size(), seq))
        {
            return false;
        }
        sent_ns = static_cast<uint64_t>(static_cast<uint32_t>(m.header().stamp().sec())) * 1000000000ULL +
                  m.header().stamp().nanosec();
        return true;
    }
    static size_t wire_bytes(const Msg& m)
    {
        size_t n = 8;                                      // stamp
        n = align4(n + 4 + m.header().frame_id().size() + 1); // frame_id
        n = align4(n + 4 + m.format().size() + 1);         // format
        n += 4 + m.data().size();                          // data
        return 4 + n;                                      // + encapsulation
    }
};

// ---- statistics, as bench/src/delivery.rs computes them -------------------------------------

struct Counts
{
    uint64_t expected = 0, received = 0, lost = 0, duplicates = 0, reordered = 0, foreign = 0;

    std::string json() const
    {
        std::ostringstream s;
        s << "{\"expected\":" << expected << ",\"received\":" << received << ",\"lost\":" << lost
          << ",\"duplicates\":" << duplicates << ",\"reordered\":" << reordered
          << ",\"foreign\":" << foreign << "}";
        return s.str();
    }
};

std::string num(double v)
{
    if (!std::isfinite(v))
    {
        return "null";
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".eE") == std::string::npos)
    {
        s += ".0";
    }
    return s;
}

/// Nearest-rank quantile of sorted values.
double quantile(const std::vector<double>& sorted, double q)
{
    if (sorted.empty())
    {
        return 0;
    }
    auto n = static_cast<long>(sorted.size());
    long i = std::min(std::max(static_cast<long>(std::ceil(n * q)), 1L), n) - 1;
    return sorted[static_cast<size_t>(i)];
}

std::string summary_json(std::vector<double> us)
{
    if (us.empty())
    {
        return "{\"count\":0,\"mean_us\":0.0,\"median_us\":0.0,\"min_us\":0.0,\"max_us\":0.0,"
               "\"std_us\":0.0,\"p90_us\":0.0,\"p99_us\":0.0,\"ecdf\":[]}";
    }
    std::sort(us.begin(), us.end());
    double n = static_cast<double>(us.size());
    double mean = 0;
    for (double v : us) mean += v;
    mean /= n;
    double var = 0;
    for (double v : us) var += (v - mean) * (v - mean);
    var /= n;
    std::ostringstream s;
    s << "{\"count\":" << us.size() << ",\"mean_us\":" << num(mean)
      << ",\"median_us\":" << num(quantile(us, 0.5)) << ",\"min_us\":" << num(us.front())
      << ",\"max_us\":" << num(us.back()) << ",\"std_us\":" << num(std::sqrt(var))
      << ",\"p90_us\":" << num(quantile(us, 0.9)) << ",\"p99_us\":" << num(quantile(us, 0.99))
      << ",\"ecdf\":[";
    for (int i = 0; i <= 100; ++i)
    {
        double f = i / 100.0;
        s << (i ? "," : "") << "[" << num(quantile(us, std::max(f, 1.0 / n))) << "," << num(f)
          << "]";
    }
    s << "]}";
    return s.str();
}

/// Tracks a stream of messages numbered 0..expected (bench/src/delivery.rs's Tracker).
class Tracker
{
public:
    explicit Tracker(uint64_t expected) : seen_(expected, false)
    {
        counts_.expected = expected;
        lat_.reserve(std::min<uint64_t>(expected, 1 << 20));
    }
    bool record(uint64_t seq, double latency_us, bool with_latency)
    {
        if (seq >= counts_.expected)
        {
            counts_.foreign++;
            return false;
        }
        if (seen_[seq])
        {
            counts_.duplicates++;
            return false;
        }
        seen_[seq] = true;
        counts_.received++;
        if (has_highest_ && seq < highest_)
        {
            counts_.reordered++;
        }
        else
        {
            highest_ = seq;
            has_highest_ = true;
        }
        if (with_latency)
        {
            lat_.push_back(latency_us);
        }
        return true;
    }
    void foreign()
    {
        counts_.foreign++;
    }
    uint64_t received() const
    {
        return counts_.received;
    }
    Counts counts() const
    {
        Counts c = counts_;
        c.lost = c.expected - c.received;
        return c;
    }
    const std::vector<double>& latencies() const
    {
        return lat_;
    }

private:
    std::vector<bool> seen_;
    uint64_t highest_ = 0;
    bool has_highest_ = false;
    Counts counts_;
    std::vector<double> lat_;
};

// ---- a bounded queue between Fast DDS's listener thread and the main thread ------------------

template <class T>
class Queue
{
public:
    explicit Queue(size_t cap) : cap_(cap) {}
    /// Drops the item when full (the receiver fell behind; the loss is counted).
    void try_push(T&& v)
    {
        {
            std::lock_guard<std::mutex> g(m_);
            if (q_.size() >= cap_)
            {
                return;
            }
            q_.push_back(std::move(v));
        }
        cv_.notify_one();
    }
    bool pop_until(T& out, Clock::time_point until)
    {
        std::unique_lock<std::mutex> g(m_);
        if (!cv_.wait_until(g, until, [&] { return !q_.empty(); }))
        {
            return false;
        }
        out = std::move(q_.front());
        q_.pop_front();
        return true;
    }
    bool try_pop(T& out)
    {
        return pop_until(out, Clock::now() - std::chrono::seconds(1));
    }

private:
    size_t cap_;
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<T> q_;
};

// ---- DDS ------------------------------------------------------------------------------------

/// A participant that only talks UDPv4 on 127.0.0.1 (see the head of this file).
DomainParticipant* loopback_participant(int domain, const std::string& name)
{
    DomainParticipantQos pqos = PARTICIPANT_QOS_DEFAULT;
    pqos.name(name);
    pqos.transport().use_builtin_transports = false;
    auto udp = std::make_shared<eprosima::fastdds::rtps::UDPv4TransportDescriptor>();
    udp->interfaceWhiteList.push_back("127.0.0.1");
    udp->maxInitialPeersRange = 32;
    // Big messages arrive as bursts of 64 KB datagrams: room for them in the socket buffers
    // (the kernel caps this at net.core.rmem_max/wmem_max).
    udp->receiveBufferSize = 4 * 1024 * 1024;
    udp->sendBufferSize = 4 * 1024 * 1024;
    pqos.transport().user_transports.push_back(udp);

    Locator_t lo;
    lo.kind = LOCATOR_KIND_UDPv4;
    IPLocator::setIPv4(lo, 127, 0, 0, 1);
    lo.port = 0; // 0: the well-known ports of this participant's id
    auto& wire = pqos.wire_protocol();
    wire.builtin.metatrafficUnicastLocatorList.push_back(lo);
    wire.default_unicast_locator_list.push_back(lo);
    wire.builtin.initialPeersList.push_back(lo);
    wire.builtin.avoid_builtin_multicast = true;

    DomainParticipant* p = DomainParticipantFactory::get_instance()->create_participant(
        static_cast<DomainId_t>(domain), pqos);
    if (p == nullptr)
    {
        fail("cannot create the DDS participant");
    }
    return p;
}

template <class Q>
void common_qos(Q& q, const Args& a)
{
    q.reliability().kind = a.best_effort ? BEST_EFFORT_RELIABILITY_QOS : RELIABLE_RELIABILITY_QOS;
    q.durability().kind = VOLATILE_DURABILITY_QOS;
    if (a.keep_all)
    {
        q.history().kind = KEEP_ALL_HISTORY_QOS;
    }
    else
    {
        q.history().kind = KEEP_LAST_HISTORY_QOS;
        q.history().depth = a.depth;
    }
    // rmw_fastrtps's memory policy: payloads that grow as needed.
    q.endpoint().history_memory_policy =
        eprosima::fastrtps::rtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE;
    q.data_sharing().off();
}

struct Sample
{
    uint64_t seq = NO_SEQ;
    uint64_t sent_ns = 0;
    uint64_t at_ns = 0;           // sink: receive time (Unix ns)
    Clock::time_point at;         // source: receive time (monotonic)
    size_t wire = 0;
    std::shared_ptr<void> msg;    // sink: the sample itself, when it must be echoed
};

/// Logs when the writer matches readers (discovery time, on stderr).
struct WriterLog : public DataWriterListener
{
    void on_publication_matched(DataWriter*, const PublicationMatchedStatus& s) override
    {
        note("writer matched " + std::to_string(s.current_count) + " reader(s)");
    }
};

template <class K>
struct Listener : public DataReaderListener
{
    Queue<Sample>* queue = nullptr;
    /// Keep the sample (to echo it): all of them, or only warm-up ones.
    bool keep_all = false;

    void on_subscription_matched(DataReader*, const SubscriptionMatchedStatus& s) override
    {
        note("reader matched " + std::to_string(s.current_count) + " writer(s)");
    }

    void on_data_available(DataReader* r) override
    {
        SampleInfo info;
        for (;;)
        {
            auto m = std::make_shared<typename K::Msg>();
            if (r->take_next_sample(m.get(), &info) != ReturnCode_t::RETCODE_OK)
            {
                break;
            }
            if (!info.valid_data)
            {
                continue;
            }
            Sample s;
            s.at = Clock::now();
            s.at_ns = now_ns();
            if (!K::stamp(*m, s.seq, s.sent_ns))
            {
                s.seq = NO_SEQ;
            }
            s.wire = K::wire_bytes(*m);
            if (keep_all || (s.seq != NO_SEQ && (s.seq & WARMUP) != 0))
            {
                s.msg = m;
            }
            queue->try_push(std::move(s));
        }
    }
};

template <class K>
struct Node
{
    DomainParticipant* participant = nullptr;
    DataWriter* writer = nullptr;
    DataReader* reader = nullptr;
    Listener<K> listener;
    WriterLog writer_log;

    ~Node()
    {
        if (participant != nullptr)
        {
            participant->delete_contained_entities();
            DomainParticipantFactory::get_instance()->delete_participant(participant);
        }
    }
};

Topic* make_topic(DomainParticipant* p, const std::string& name, TypeSupport& ts)
{
    Topic* t = p->create_topic(name, ts.get_type_name(), TOPIC_QOS_DEFAULT);
    if (t == nullptr)
    {
        fail("cannot create topic " + name);
    }
    return t;
}

template <class K>
void make_node(Node<K>& n, const Args& a, const std::string& write_topic,
               const std::string& read_topic, Queue<Sample>* queue, bool keep_all_samples)
{
    n.participant = loopback_participant(
        a.domain, a.source ? "roam_loadgen_fastdds_source" : "roam_loadgen_fastdds_sink");
    TypeSupport ts(new typename K::PubSub());
    ts.register_type(n.participant);
    Topic* wt = make_topic(n.participant, "rt" + write_topic, ts);
    Topic* rt = make_topic(n.participant, "rt" + read_topic, ts);
    Publisher* pub = n.participant->create_publisher(PUBLISHER_QOS_DEFAULT);
    Subscriber* sub = n.participant->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
    DataWriterQos wq = DATAWRITER_QOS_DEFAULT;
    common_qos(wq, a);
    DataReaderQos rq = DATAREADER_QOS_DEFAULT;
    common_qos(rq, a);
    n.writer = pub->create_datawriter(wt, wq, &n.writer_log);
    if (n.writer == nullptr)
    {
        fail("cannot create the DDS writer");
    }
    n.listener.queue = queue;
    n.listener.keep_all = keep_all_samples;
    n.reader = sub->create_datareader(rt, rq, &n.listener);
    if (n.reader == nullptr)
    {
        fail("cannot create the DDS reader");
    }
}

/// A reliable write that finds the readers' queues full blocks, then fails: keep trying (that is
/// back-pressure, not failure) unless it persists.
void write(DataWriter* w, void* msg)
{
    auto deadline = Clock::now() + std::chrono::seconds(30);
    while (!w->write(msg))
    {
        if (Clock::now() > deadline)
        {
            fail("DDS write failed for 30 s");
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
}

// ---- source ---------------------------------------------------------------------------------

template <class K>
int source(const Args& a)
{
    const auto started = Clock::now();
    const std::string echo_topic = a.topic + "/echo";
    Queue<Sample> rx(1 << 16);
    Node<K> node;
    make_node(node, a, a.topic, echo_topic, &rx, false);

    // Warm-up: one message every 100 ms until one comes back.
    const auto deadline = started + std::chrono::microseconds(static_cast<long long>(a.path_timeout_ms * 1e3));
    uint64_t k = 0;
    double path_up_ms = 0;
    for (;;)
    {
        if (Clock::now() > deadline)
        {
            fail("no warm-up echo within " + std::to_string(static_cast<long>(a.path_timeout_ms)) +
                 " ms: the path from " + a.topic + " back to " + echo_topic + " is not up");
        }
        typename K::Msg m;
        K::encode(m, std::min<size_t>(a.size, 1024), WARMUP | k, now_ns());
        write(node.writer, &m);
        ++k;
        Sample e;
        auto until = Clock::now() + std::chrono::milliseconds(100);
        bool up = false;
        while (rx.pop_until(e, until))
        {
            if (e.seq != NO_SEQ && (e.seq & WARMUP) != 0)
            {
                up = true;
                break;
            }
        }
        if (up)
        {
            path_up_ms = us_since(started, Clock::now()) / 1e3;
            break;
        }
    }
    // Drain late warm-up echoes.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    {
        Sample e;
        while (rx.try_pop(e)) {}
    }

    std::vector<Clock::time_point> sent_at(a.count);
    std::vector<bool> sent(a.count, false);
    Tracker tracker(a.count);
    auto on_echo = [&](const Sample& e) {
        if (e.seq != NO_SEQ && (e.seq & WARMUP) != 0)
        {
            return;
        }
        if (e.seq < a.count && sent[e.seq])
        {
            tracker.record(e.seq, us_since(sent_at[e.seq], e.at), true);
        }
        else
        {
            tracker.foreign();
        }
    };
    const bool paced = a.rate > 0;
    const auto period = std::chrono::duration<double>(paced ? 1.0 / a.rate : 0.0);
    const auto echo_timeout = std::chrono::microseconds(static_cast<long long>(a.echo_timeout_ms * 1e3));
    const auto t0 = Clock::now();
    size_t wire = 0;
    typename K::Msg m;
    for (uint64_t seq = 0; seq < a.count; ++seq)
    {
        if (paced)
        {
            auto due = t0 + std::chrono::duration_cast<Clock::duration>(period * static_cast<double>(seq));
            Sample e;
            while (Clock::now() < due)
            {
                if (rx.pop_until(e, due) && a.echo)
                {
                    on_echo(e);
                }
            }
        }
        K::encode(m, a.size, seq, now_ns());
        wire = K::wire_bytes(m);
        sent_at[seq] = Clock::now();
        sent[seq] = true;
        write(node.writer, &m);
        if (a.echo && !paced)
        {
            // Closed loop: one message in flight; wait for its echo (or give up on it).
            auto until = Clock::now() + echo_timeout;
            Sample e;
            while (rx.pop_until(e, until))
            {
                bool done = e.seq == seq;
                on_echo(e);
                if (done)
                {
                    break;
                }
            }
        }
        else if (a.echo)
        {
            Sample e;
            while (rx.try_pop(e))
            {
                on_echo(e);
            }
        }
    }
    const double send_seconds = us_since(t0, Clock::now()) / 1e6;
    if (a.echo)
    {
        // The last echoes.
        auto until = Clock::now() + echo_timeout;
        Sample e;
        while (tracker.received() < a.count && rx.pop_until(e, until))
        {
            on_echo(e);
        }
    }
    else
    {
        // Let the reliable writer deliver what it holds before the participant goes.
        std::this_thread::sleep_for(std::chrono::microseconds(static_cast<long long>(a.linger_ms * 1e3)));
    }
    std::ostringstream r;
    r << "{\"role\":\"source\",\"vendor\":\"fastdds\",\"kind\":\"" << K::name << "\",\"size\":" << a.size
      << ",\"wire_bytes\":" << wire << ",\"rate_hz\":" << num(a.rate) << ",\"sent\":" << a.count
      << ",\"send_seconds\":" << num(send_seconds)
      << ",\"send_rate\":" << num(a.count / std::max(send_seconds, 1e-9))
      << ",\"path_up_ms\":" << num(path_up_ms) << ",\"rtt\":"
      << (a.echo ? summary_json(tracker.latencies()) : "null")
      << ",\"echo\":" << (a.echo ? tracker.counts().json() : "null") << "}";
    std::printf("%s\n", r.str().c_str());
    std::fflush(stdout);
    return 0;
}

// ---- sink -----------------------------------------------------------------------------------

template <class K>
int sink(const Args& a)
{
    const std::string echo_topic = a.topic + "/echo";
    // Bounded by bytes as well as count: at most about 256 MiB of samples waiting.
    size_t cap = (size_t(256) << 20) / std::max<size_t>(a.size, 256);
    Queue<Sample> rx(std::min<size_t>(std::max<size_t>(cap, 16), 1 << 16));
    Node<K> node;
    make_node(node, a, echo_topic, a.topic, &rx, a.echo);
    Tracker tracker(a.count);
    uint64_t bytes = 0, first = 0, last = 0;
    bool have_first = false;
    auto last_progress = Clock::now();
    const auto idle = std::chrono::microseconds(static_cast<long long>(a.idle_ms * 1e3));
    std::printf("ready\n");
    std::fflush(stdout);
    for (;;)
    {
        if (g_stop.load())
        {
            break;
        }
        if (!a.echo && tracker.received() >= a.count)
        {
            break;
        }
        if (have_first && Clock::now() - last_progress > idle)
        {
            break;
        }
        Sample s;
        if (!rx.pop_until(s, Clock::now() + std::chrono::milliseconds(100)))
        {
            continue;
        }
        bool warm = s.seq != NO_SEQ && (s.seq & WARMUP) != 0;
        if (a.echo || warm)
        {
            if (s.msg)
            {
                write(node.writer, s.msg.get());
            }
            continue;
        }
        if (s.seq == NO_SEQ)
        {
            tracker.foreign();
            continue;
        }
        double lat = s.at_ns > s.sent_ns ? (s.at_ns - s.sent_ns) / 1e3 : 0.0;
        if (tracker.record(s.seq, lat, true))
        {
            bytes += s.wire;
            if (!have_first)
            {
                first = s.at_ns;
                have_first = true;
            }
            last = s.at_ns;
            last_progress = Clock::now();
        }
    }
    if (a.echo)
    {
        return 0;
    }
    double seconds = have_first ? (last - first) / 1e9 : 0.0;
    Counts c = tracker.counts();
    double rate = seconds > 0 ? (c.received > 0 ? c.received - 1 : 0) / seconds : 0.0;
    std::ostringstream r;
    r << "{\"role\":\"sink\",\"vendor\":\"fastdds\",\"kind\":\"" << K::name << "\",\"counts\":" << c.json()
      << ",\"one_way\":" << summary_json(tracker.latencies()) << ",\"rate\":" << num(rate)
      << ",\"mbit_s\":" << num(seconds > 0 ? bytes * 8.0 / seconds / 1e6 : 0.0)
      << ",\"seconds\":" << num(seconds) << "}";
    std::printf("%s\n", r.str().c_str());
    std::fflush(stdout);
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    Args a = parse(argc, argv);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);
    if (a.kind == "string")
    {
        return a.source ? source<StringKind>(a) : sink<StringKind>(a);
    }
    return a.source ? source<ImageKind>(a) : sink<ImageKind>(a);
}
