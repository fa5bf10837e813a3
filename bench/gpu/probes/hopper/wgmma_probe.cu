#include <cuda_bf16.h>
#include <cstdio>
typedef __nv_bfloat16 B;
#define F(a,i) "+f"(a[i])
#define G4(a,i) F(a,i),F(a,i+1),F(a,i+2),F(a,i+3)
#define H(a,i) G4(a,i),G4(a,i+4),G4(a,i+8),G4(a,i+12)
typedef unsigned U;typedef unsigned long long Q;
#define A(x) asm volatile(x:::"memory");
__device__ U W(int r,int c){return (c>>6)*8192+r*128+((((c&63)>>3)^(r&7))<<4)+(c&7)*2;}
__device__ Q D(U a,U l=16,U s=1024){return (a&0x3FFFF)>>4|(Q)(l>>4)<<16|(Q)(s>>4)<<32|1ull<<62;}
__global__ void K(B*G,float*S,float*O,int L,int M){extern __shared__ __align__(1024) char m[];int t=threadIdx.x,i,k;
for(i=t;i<24576;i+=128)*(B*)(m+i/8192*16384+W(i%8192/128,i%128))=G[i];
A("fence.proxy.async.shared::cta;")__syncthreads();U b=__cvta_generic_to_shared(m);float s[32],o[64]={};U p[16];
A("wgmma.fence.sync.aligned;")
#pragma unroll
for(k=0;k<8;k++){U x=k/4*8192+k%4*32;asm volatile("{.reg .pred p;setp.ne.b32 p,%34,0;wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31},%32,%33,p,1,1,0,0;}":H(s,0),H(s,16):"l"(D(b+x)),"l"(D(b+16384+x)),"r"(k));}
A("wgmma.commit_group.sync.aligned;")A("wgmma.wait_group.sync.aligned 0;")
int w=t/32,g=t%32/4,q=t%4;for(i=0;i<32;i++)S[(16*w+g+8*(i/2%2))*64+8*(i/4)+2*q+i%2]=s[i];
for(i=0;i<16;i++){__nv_bfloat162 h=__floats2bfloat162_rn(s[2*i],s[2*i+1]);p[i]=*(U*)&h;}
A("wgmma.fence.sync.aligned;")
#pragma unroll
for(k=0;k<4;k++){asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63},{%64,%65,%66,%67},%68,1,1,1,1;":H(o,0),H(o,16),H(o,32),H(o,48):"r"(p[4*k]),"r"(p[4*k+1]),"r"(p[4*k+2]),"r"(p[4*k+3]),"l"(D(b+32768+k*2048,L,M)));}
A("wgmma.commit_group.sync.aligned;")A("wgmma.wait_group.sync.aligned 0;")
for(i=0;i<64;i++)O[(16*w+g+8*(i/2%2))*128+8*(i/4)+2*q+i%2]=o[i];}
int main(){static float f[24576],S[4096],O[8192];static B h[24576];B*d;float*e,*r;
for(int i=0;i<24576;i++){h[i]=__float2bfloat16((rand()%2001-1000)/1e3f);f[i]=__bfloat162float(h[i]);}
cudaMalloc(&d,49152);cudaMalloc(&e,16384);cudaMalloc(&r,32768);cudaMemcpy(d,h,49152,(cudaMemcpyKind)1);
for(int c=0;c<2;c++){int L=c?1024:8192,M=c?8192:1024;cudaMemset(r,0,32768);K<<<1,128,49152>>>(d,e,r,L,M);
int z=cudaDeviceSynchronize();cudaMemcpy(S,e,16384,(cudaMemcpyKind)2);cudaMemcpy(O,r,32768,(cudaMemcpyKind)2);
double a,x=0,y=0,u=0,v=0;for(int i=0;i<64;i++)for(int j=0;j<64;j++){a=0;for(int k=0;k<128;k++)a+=(double)f[i*128+k]*f[8192+j*128+k];x=fmax(x,fabs(a-S[i*64+j]));u=fmax(u,fabs(a));}
for(int i=0;i<64;i++)for(int k=0;k<128;k++){a=0;for(int j=0;j<64;j++)a+=(double)__bfloat162float(__float2bfloat16(S[i*64+j]))*f[16384+j*128+k];y=fmax(y,fabs(a-O[i*128+k]));v=fmax(v,fabs(a));}
printf("%d L=%d M=%d S %.3g %.3g O %.3g %.3g\n",z,L,M,u,x/u,v,y/v);}}
