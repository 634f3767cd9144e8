"""Writes handmade.json, the hand-built trace of perftrace's tests: one page
(main frame F1, renderer 10) with two navigations, a redirected slow document,
render-blocking and non-blocking requests, an image LCP, layout shifts in two
clusters plus ones that must not count, and long tasks on and off the page's
main thread. Run: python3 handmade.py (from this directory)."""
import json, os
E=[]
def ev(name, ts, pid=10, tid=10, ph="I", dur=None, args=None, cat="devtools.timeline"):
    e={"name":name,"cat":cat,"ph":ph,"ts":ts,"pid":pid,"tid":tid,"args":args or {}}
    if dur is not None: e["dur"]=dur
    E.append(e)
def meta(name, pid, tid, value):
    E.append({"name":name,"cat":"__metadata","ph":"M","ts":0,"pid":pid,"tid":tid,"args":{"name":value}})
meta("process_name",1,0,"Browser"); meta("thread_name",1,1,"CrBrowserMain")
meta("process_name",10,0,"Renderer"); meta("thread_name",10,10,"CrRendererMain"); meta("thread_name",10,11,"Compositor")
meta("process_name",20,0,"Renderer"); meta("thread_name",20,20,"CrRendererMain")
ev("TracingStartedInBrowser",1_000_000,pid=1,tid=1,args={"data":{"frames":[
  {"frame":"F1","url":"about:blank","processId":10,"isOutermostMainFrame":True,"isInPrimaryMainFrame":True,"name":""},
  {"frame":"F2","url":"https://a.test/frame","processId":10,"parent":"F1","name":"child"}]}})
# the initial about:blank: not a navigation
ev("navigationStart",1_050_000,ph="R",cat="blink.user_timing",args={"frame":"F1","data":{"documentLoaderURL":"","isLoadingMainFrame":True,"isOutermostMainFrame":True,"navigationId":"N0"}})
ev("navigationStart",1_100_000,ph="R",cat="blink.user_timing",args={"frame":"F1","data":{"documentLoaderURL":"https://a.test/","isLoadingMainFrame":True,"isOutermostMainFrame":True,"navigationId":"N1"}})
# a navigation of another page's main frame
ev("navigationStart",1_150_000,pid=20,tid=20,ph="R",cat="blink.user_timing",args={"frame":"OTHER","data":{"documentLoaderURL":"https://b.test/","isLoadingMainFrame":True,"isOutermostMainFrame":True,"navigationId":"NB"}})
# the document, redirected from http to https, slow and uncompressed
ev("ResourceWillSendRequest",1_100_500,pid=1,tid=1,args={"data":{"requestId":"N1"}})
ev("ResourceSendRequest",1_101_000,args={"data":{"requestId":"N1","url":"http://a.test/","requestMethod":"GET","resourceType":"Document","priority":"VeryHigh","frame":"F1"}})
ev("ResourceSendRequest",1_102_000,args={"data":{"requestId":"N1","url":"https://a.test/","requestMethod":"GET","resourceType":"Document","priority":"VeryHigh","frame":"F1"}})
ev("ResourceReceiveResponse",1_760_000,args={"data":{"requestId":"N1","frame":"F1","statusCode":200,"mimeType":"text/html","protocol":"h2","encodedDataLength":300,
  "headers":[{"name":"content-type","value":"text/html"},{"name":"set-cookie","value":"secret=1"}],
  "timing":{"requestTime":1.101,"sendStart":0.5,"sendEnd":1.0,"receiveHeadersStart":650.0,"receiveHeadersEnd":651.0}}})
ev("ResourceFinish",1_790_000,args={"data":{"requestId":"N1","finishTime":1.79,"encodedDataLength":50300,"decodedBodyLength":50000,"didFail":False}})
# a render-blocking stylesheet, done before the first paint
ev("ResourceSendRequest",1_200_000,args={"data":{"requestId":"10.4","url":"https://a.test/site.css","requestMethod":"GET","resourceType":"Stylesheet","priority":"VeryHigh","renderBlocking":"blocking","frame":"F1","initiator":{"type":"parser","url":"https://a.test/"}}})
ev("ResourceReceiveResponse",1_650_000,args={"data":{"requestId":"10.4","frame":"F1","statusCode":200,"mimeType":"text/css","protocol":"h2"}})
ev("ResourceFinish",1_700_000,args={"data":{"requestId":"10.4","finishTime":1.7,"encodedDataLength":2000,"decodedBodyLength":8000}})
# a parser-blocking script in the body at low priority: not render-blocking
ev("ResourceSendRequest",1_210_000,args={"data":{"requestId":"10.5","url":"https://a.test/late.js","resourceType":"Script","priority":"Low","renderBlocking":"in_body_parser_blocking","frame":"F1"}})
ev("ResourceFinish",1_300_000,args={"data":{"requestId":"10.5","finishTime":1.3}})
# a blocking stylesheet that finished after the first paint: not counted
ev("ResourceSendRequest",1_220_000,args={"data":{"requestId":"10.6","url":"https://a.test/print.css","resourceType":"Stylesheet","priority":"VeryHigh","renderBlocking":"blocking","frame":"F1"}})
ev("ResourceFinish",1_900_000,args={"data":{"requestId":"10.6","finishTime":1.9}})
# the child frame's request belongs to the page; another page's does not
ev("ResourceSendRequest",1_230_000,args={"data":{"requestId":"10.7","url":"https://a.test/frame","resourceType":"Document","priority":"High","frame":"F2"}})
ev("ResourceFinish",1_260_000,args={"data":{"requestId":"10.7","finishTime":1.26}})
ev("ResourceSendRequest",1_240_000,pid=20,tid=20,args={"data":{"requestId":"20.1","url":"https://b.test/huge.bin","resourceType":"Other","priority":"Low","frame":"OTHER"}})
ev("ResourceFinish",4_000_000,pid=20,tid=20,args={"data":{"requestId":"20.1","finishTime":4.0}})
# the LCP image
ev("ResourceSendRequest",1_900_000,args={"data":{"requestId":"10.2","url":"https://a.test/hero.jpg","resourceType":"Image","priority":"High","renderBlocking":"non_blocking","frame":"F1"}})
ev("ResourceReceiveResponse",2_000_000,args={"data":{"requestId":"10.2","frame":"F1","statusCode":200,"mimeType":"image/jpeg","protocol":"h2","encodedDataLength":120000}})
ev("ResourceFinish",2_500_000,args={"data":{"requestId":"10.2","finishTime":2.5,"encodedDataLength":120000,"decodedBodyLength":120000}})
ev("firstPaint",1_800_000,ph="R",cat="loading,rail,devtools.timeline",args={"frame":"F1","data":{"navigationId":"N1"}})
ev("firstContentfulPaint",1_800_000,ph="R",cat="loading,rail,devtools.timeline",args={"frame":"F1","data":{"navigationId":"N1"}})
ev("largestContentfulPaint::Candidate",1_800_000,ph="R",cat="loading,rail,devtools.timeline",args={"frame":"F1","data":{"candidateIndex":1,"navigationId":"N1","nodeId":5,"nodeName":"H1","type":"text","size":1000}})
ev("LargestImagePaint::Candidate",2_600_000,cat="loading",args={"data":{"DOMNodeId":7,"imageUrl":"https://a.test/hero.jpg","size":90000}})
ev("largestContentfulPaint::Candidate",2_600_000,ph="R",cat="loading,rail,devtools.timeline",args={"frame":"F1","data":{"candidateIndex":2,"navigationId":"N1","nodeId":7,"nodeName":"IMG id='hero'","type":"image","size":90000}})
ev("MarkDOMContent",1_795_000,args={"data":{"frame":"F1","isMainFrame":True}})
ev("MarkLoad",2_550_000,args={"data":{"frame":"F1","isMainFrame":True}})
# long tasks: one across FCP (clipped to 100 ms: blocks 50), one after (blocks 30)
ev("RunTask",1_700_000,ph="X",dur=200_000,cat="disabled-by-default-devtools.timeline")
ev("ParseHTML",1_700_100,ph="X",dur=150_000,args={"beginData":{"frame":"F1","url":"https://a.test/"}})
ev("RunTask",3_000_000,ph="X",dur=80_000,cat="disabled-by-default-devtools.timeline")
ev("TimerFire",3_000_050,ph="X",dur=75_000,args={"data":{"frame":"F1","timerId":3}})
ev("FunctionCall",3_000_100,ph="X",dur=70_000,args={"data":{"frame":"F1","url":"https://a.test/app.js","lineNumber":10,"columnNumber":5,"functionName":"heavy"}})
# long tasks that are not the page's main thread
ev("RunTask",3_100_000,pid=20,tid=20,ph="X",dur=500_000,cat="disabled-by-default-devtools.timeline")
ev("RunTask",3_200_000,pid=10,tid=11,ph="X",dur=300_000,cat="disabled-by-default-devtools.timeline")
# layout shifts: a cluster of two (0.1), one after input (ignored), a later one (0.02), another frame's (ignored)
def shift(ts, score, recent=False, frame="F1", nodes=None):
    ev("LayoutShift",ts,cat="loading",args={"frame":frame,"data":{"is_main_frame":True,"had_recent_input":recent,"score":score,"weighted_score_delta":score,"impacted_nodes":nodes or []}})
shift(2_000_000,0.05,nodes=[{"node_id":9,"debug_name":"P id='intro'","old_rect":[0,100,800,50],"new_rect":[0,200,800,50]}])
shift(2_500_000,0.05,nodes=[{"node_id":9,"debug_name":"P id='intro'","old_rect":[0,200,800,50],"new_rect":[0,250,800,50]},{"node_id":11,"debug_name":"FOOTER"}])
shift(4_000_000,0.3,recent=True)
shift(4_100_000,0.02)
shift(2_100_000,0.9,frame="OTHER")
# the next navigation: its LCP is invalidated
ev("navigationStart",5_000_000,ph="R",cat="blink.user_timing",args={"frame":"F1","data":{"documentLoaderURL":"https://a.test/next","isLoadingMainFrame":True,"isOutermostMainFrame":True,"navigationId":"N2"}})
ev("firstContentfulPaint",5_200_000,ph="R",cat="loading,rail,devtools.timeline",args={"frame":"F1","data":{"navigationId":"N2"}})
ev("largestContentfulPaint::Candidate",5_300_000,ph="R",cat="loading,rail,devtools.timeline",args={"frame":"F1","data":{"candidateIndex":1,"navigationId":"N2","nodeId":30,"type":"text"}})
ev("largestContentfulPaint::Invalidate",5_400_000,ph="R",cat="loading,rail,devtools.timeline",args={"frame":"F1","data":{"navigationId":"N2"}})
ev("ThreadControllerImpl::RunTask",6_000_000,pid=1,tid=1,ph="X",dur=1_000)
s=json.dumps({"traceEvents":E},separators=(',',':')).replace('},{"name"','},\n{"name"')
open(os.path.join(os.path.dirname(os.path.abspath(__file__)),'handmade.json'),'w').write(s+"\n")
